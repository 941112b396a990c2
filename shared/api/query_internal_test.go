package api

import (
	"math"
	"net/url"
	"testing"
	"time"
)

func TestQueryInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		want   int64
		wantOK bool
	}{
		{"42", 42, true},
		{"0", 0, true},
		{"-1", -1, true},
		{"+7", 7, true},
		{"2.5", 2, true},
		{"10ms", 10, true},
		{"  12", 12, true},
		{"1e3", 1, true},
		{"0x10", 0, true},
		{"99999999999999999999", math.MaxInt64, true},
		{"-99999999999999999999", math.MinInt64, true},
		{"", 0, false},
		{"abc", 0, false},
		{"-", 0, false},
		{"+", 0, false},
		{".5", 0, false},
		{"- 5", 0, false},
		{"１２", 0, false}, // full-width digits are not digits to parseInt
	}
	for _, tt := range tests {
		if got, ok := queryInt(tt.in); got != tt.want || ok != tt.wantOK {
			t.Errorf("queryInt(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestQueryLimit(t *testing.T) {
	t.Parallel()
	const def, most = 200, 500
	tests := []struct {
		query string
		want  int
	}{
		{"", def},
		{"limit=", def},
		{"limit=1", 1},
		{"limit=500", 500},
		{"limit=0", def},
		{"limit=-1", def},
		{"limit=abc", def},
		{"limit=2.5", 2},
		{"limit=501", most},
		{"limit=100000", most},
		{"limit=99999999999999999999", most},
		{"limit=-99999999999999999999", def},
	}
	for _, tt := range tests {
		v, err := url.ParseQuery(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := queryLimit(v, def, most); got != tt.want {
			t.Errorf("queryLimit(%q) = %d, want %d", tt.query, got, tt.want)
		}
	}
}

func TestPollTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		maxWait time.Duration
		want    time.Duration
	}{
		{"", 180 * time.Second, 30 * time.Second},
		{"", 10 * time.Second, 10 * time.Second},
		{"0", 180 * time.Second, 0},
		{"1500", 180 * time.Second, 1500 * time.Millisecond},
		{"2.5", 180 * time.Second, 2 * time.Millisecond},
		{"3600000", 180 * time.Second, 180 * time.Second},
		{"99999999999999999999", 180 * time.Second, 180 * time.Second},
		{"soon", 180 * time.Second, 30 * time.Second},
		{"-5", 180 * time.Second, 30 * time.Second},
		{"-5", 10 * time.Second, 10 * time.Second},
	}
	for _, tt := range tests {
		if got := pollTimeout(tt.in, tt.maxWait); got != tt.want {
			t.Errorf("pollTimeout(%q, %v) = %v, want %v", tt.in, tt.maxWait, got, tt.want)
		}
	}
}
