package api

import (
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// queryInt reads a number of a query value the way the original service
// does (JavaScript's parseInt): leading spaces and a sign, then the run of
// digits that follows, whatever comes after it ("2.5" is 2, "10ms" is 10).
// ok is false when no digit leads. A number too large for int64 reads as
// the largest of its sign, which every caller clamps.
func queryInt(s string) (n int64, ok bool) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	sign := ""
	if s != "" && (s[0] == '-' || s[0] == '+') {
		sign, s = s[:1], s[1:]
	}
	end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(s)
	}
	if end == 0 {
		return 0, false
	}
	// The digits are checked: only a number out of range fails, and then
	// ParseInt gives the largest of its sign.
	n, _ = strconv.ParseInt(sign+s[:end], 10, 64)
	return n, true
}

// queryLimit reads ?limit as the original does: absent, unreadable, zero
// or negative is def, above maxLimit is maxLimit. No limit is refused:
// every value has a reading a client can live with.
func queryLimit(v url.Values, def, maxLimit int) int {
	n, ok := queryInt(v.Get("limit"))
	switch {
	case !ok || n <= 0:
		return def
	case n > int64(maxLimit):
		return maxLimit
	}
	return int(n)
}
