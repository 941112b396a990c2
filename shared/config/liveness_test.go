package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/liveness"
)

func TestLoadLivenessNoticeAfter(t *testing.T) {
	t.Parallel()
	const name = "LETAGENTS_LIVENESS_NOTICE_AFTER_MS"
	tests := []struct {
		value string
		want  time.Duration // 0: refused
	}{
		{"", liveness.DefaultNoticeAfter},
		{"120000", 2 * time.Minute},
		{"300000", 5 * time.Minute},
		{"3600000", time.Hour},
		{"119999", 0},
		{"3600001", 0},
		{"0", 0},
		{"-300000", 0},
		{"5m", 0},
		{"300000.5", 0},
	}
	for _, tt := range tests {
		cfg, err := config.Load(func(k string) string {
			if k == name {
				return tt.value
			}
			return ""
		})
		switch {
		case tt.want == 0 && (err == nil || !strings.Contains(err.Error(), name)):
			t.Errorf("%s=%q: err = %v, want an error naming %s", name, tt.value, err, name)
		case tt.want != 0 && err != nil:
			t.Errorf("%s=%q: %v", name, tt.value, err)
		case tt.want != 0 && cfg.LivenessNoticeAfter != tt.want:
			t.Errorf("%s=%q: LivenessNoticeAfter = %v, want %v", name, tt.value, cfg.LivenessNoticeAfter, tt.want)
		}
	}
}
