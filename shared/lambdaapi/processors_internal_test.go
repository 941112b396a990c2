package lambdaapi

import (
	"runtime"
	"testing"
)

// A function runs on one processor unless its environment says how many
// (GOMAXPROCS, which Go's runtime has then already applied). Not
// parallel: GOMAXPROCS is the test process's, restored after.
func TestOneProcessorUnlessTheEnvironmentSays(t *testing.T) {
	tests := []struct {
		name, env string
		before    int
		want      int
	}{
		{"unset", "", 3, 1},
		{"set", "3", 3, 3},
	}
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.GOMAXPROCS(tt.before)
			oneProcessor(func(k string) string {
				if k == "GOMAXPROCS" {
					return tt.env
				}
				return ""
			})
			if got := runtime.GOMAXPROCS(0); got != tt.want {
				t.Errorf("GOMAXPROCS %d with the environment's %q, want %d", got, tt.env, tt.want)
			}
		})
	}
}
