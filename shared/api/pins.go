package api

import (
	"net/http"

	"github.com/letagents/letagents-go/shared/letagents"
	"github.com/letagents/letagents-go/shared/wire"
)

// pinMessage is POST …/messages/{message_id}/pin (the admin gate): the
// message, pinned, as reads give it.
func (s *server) pinMessage(w http.ResponseWriter, r *http.Request, c call) error {
	return s.setPin(w, r, c, true)
}

// unpinMessage is DELETE …/messages/{message_id}/pin (the admin gate).
func (s *server) unpinMessage(w http.ResponseWriter, r *http.Request, c call) error {
	return s.setPin(w, r, c, false)
}

func (s *server) setPin(w http.ResponseWriter, r *http.Request, c call, pin bool) error {
	seq, err := letagents.ParseMessageID(c.ps["message_id"])
	if err != nil || seq == 0 {
		return letagents.Errorf(letagents.NotFound, "Message not found")
	}
	m, err := s.Store.PinMessage(r.Context(), c.room, seq, identity(r).Account.Login, pin, s.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toMessage(m))
	return nil
}

// listPins is GET …/pins: the room's pinned messages, the most recently
// pinned first.
func (s *server) listPins(w http.ResponseWriter, r *http.Request, c call) error {
	msgs, err := s.Store.Pins(r.Context(), c.room)
	if err != nil {
		return err
	}
	j := wire.Pins{RoomID: c.room, Messages: make([]wire.Message, len(msgs))}
	for i, m := range msgs {
		j.Messages[i] = toMessage(m)
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}
