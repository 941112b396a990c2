package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestClientAddress pins what the rate limits count by: the gateway's
// sourceIp when the Lambda adapter recorded it, else the connection's
// peer; never X-Forwarded-For, which any client can write.
func TestClientAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, remoteAddr, forwardedFor, gateway, want string
	}{
		{"peer with a port", "10.0.0.1:54321", "", "", "10.0.0.1"},
		{"IPv6 peer", "[2001:db8::1]:443", "", "", "2001:db8::1"},
		{"peer without a port", "203.0.113.7", "", "", "203.0.113.7"},
		{"forwarded-for ignored", "10.0.0.1:54321", "198.51.100.9", "", "10.0.0.1"},
		{"gateway's sourceIp", "10.0.0.1:54321", "", "192.0.2.4", "192.0.2.4"},
		{"gateway's sourceIp over forwarded-for", "192.0.2.4", "198.51.100.9, 10.1.1.1", "192.0.2.4", "192.0.2.4"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodPost, "/rooms/x/join", nil)
		r.RemoteAddr = tt.remoteAddr
		if tt.forwardedFor != "" {
			r.Header.Set("X-Forwarded-For", tt.forwardedFor)
		}
		if tt.gateway != "" {
			r = r.WithContext(WithClientAddress(r.Context(), tt.gateway))
		}
		if got := clientAddress(r); got != tt.want {
			t.Errorf("%s: clientAddress = %q; want %q", tt.name, got, tt.want)
		}
	}
}
