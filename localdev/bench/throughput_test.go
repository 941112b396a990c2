package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/wire"
)

// Floor G's server answers the bench's sends as the service does, with
// 201 and the message, so that its CPU is the same exchange's without a
// database; a body it cannot read is refused.
func TestBareSendsAnswerAsASend(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(bareSends())
	defer srv.Close()
	if err := send(context.Background(), srv.Client(), srv.URL, "room a", "hello"); err != nil {
		t.Fatalf("send to the bare server: %v", err)
	}
	resp, err := srv.Client().Post(srv.URL+"/rooms/r/messages", "application/json", strings.NewReader(`{"sender":"ada","text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m wire.Message
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || m.RoomID != "r" || m.Sender != "ada" || m.Text != "hi" || m.ID != "msg_2" {
		t.Errorf("answer %d %+v; want 201 with msg_2 of ada in r saying hi", resp.StatusCode, m)
	}
	bad, err := srv.Client().Post(srv.URL+"/rooms/r/messages", "application/json", strings.NewReader(`{"sender":`))
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Errorf("a cut body answered %d, want 400", bad.StatusCode)
	}
}
