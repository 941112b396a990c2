package auth

import (
	"net/url"
	"strings"
)

// SafeRedirect returns target if it is a path on this site, else "/". A
// sign-in must never send the browser elsewhere: "//evil.example" and
// "/\evil.example" are other hosts to a browser, and a scheme or host of
// any kind is refused.
func SafeRedirect(target string) string {
	if target == "" || target[0] != '/' || len(target) > 2048 {
		return "/"
	}
	if len(target) > 1 && (target[1] == '/' || target[1] == '\\') {
		return "/"
	}
	if strings.ContainsFunc(target, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\\' }) {
		return "/"
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	return target
}
