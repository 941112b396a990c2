package api

import (
	"net/http"
	"testing"
)

func TestCheckGates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		route Route
		ok    bool
	}{
		{"room route with a room gate", Route{Method: http.MethodGet, Pattern: "/rooms/{room}/x", gate: member}, true},
		{"room route declared public", Route{Method: http.MethodGet, Pattern: "/in/{room}", gate: public}, true},
		{"public route", Route{Method: http.MethodGet, Pattern: "/x", gate: public}, true},
		{"no gate declared", Route{Method: http.MethodGet, Pattern: "/rooms/{room}/x"}, false},
		{"room gate without a room", Route{Method: http.MethodPost, Pattern: "/x", gate: admin}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if p := recover(); (p == nil) != tt.ok {
					t.Errorf("checkGates panicked with %v, want a panic: %v", p, !tt.ok)
				}
			}()
			checkGates([]Route{tt.route})
		})
	}
}
