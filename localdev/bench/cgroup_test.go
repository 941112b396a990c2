package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCPUCgroups checks the files -poll-cpu writes and reads, on a
// directory laid out as each cgroup version mounts the cpu controller
// (the kernel's own answers are what the scale run reports).
func TestCPUCgroups(t *testing.T) {
	for _, tc := range []struct {
		name     string
		files    map[string]string // what the mounts hold before the run
		stat     string            // a leaf's cpu.stat, as the kernel writes it
		wantRoot string
		wantV2   bool
		want     map[string]string // what the run's cgroups hold after, beside the leaf's cpu.stat
	}{
		{
			name:     "v2, cpu among the controllers",
			files:    map[string]string{"v2/cgroup.controllers": "cpuset cpu io memory pids", "v2/cgroup.subtree_control": ""},
			stat:     "usage_usec 900\nnr_periods 410\nnr_throttled 16\nthrottled_usec 1100000\nnr_bursts 0\n",
			wantRoot: "v2", wantV2: true,
			want: map[string]string{"v2/cgroup.subtree_control": "+cpu", "v2/run/cgroup.subtree_control": "+cpu",
				"v2/run/poll-1/cpu.max": "50000 100000"},
		},
		{
			name: "v2 without cpu, then v1",
			files: map[string]string{"v2/cgroup.controllers": "memory pids", "v2/cgroup.subtree_control": "",
				"v1/cpu.cfs_quota_us": "-1"},
			stat:     "nr_periods 410\nnr_throttled 16\nthrottled_time 1100000000\n",
			wantRoot: "v1",
			want:     map[string]string{"v1/run/poll-1/cpu.cfs_period_us": "100000", "v1/run/poll-1/cpu.cfs_quota_us": "50000"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, v := range tc.files {
				writeTestFile(t, filepath.Join(dir, name), v)
			}
			roots := []cgroupRoot{{filepath.Join(dir, "v2"), true}, {filepath.Join(dir, "v1"), false}}
			c, err := newCPUCgroups(roots, "run", 0.5)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dir, tc.wantRoot, "run"); c.dir != want || c.v2 != tc.wantV2 {
				t.Errorf("cgroups in %s (v2 %v), want %s (v2 %v)", c.dir, c.v2, want, tc.wantV2)
			}
			leaf, err := c.leaf("poll")
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
					t.Errorf("%s = %q (%v), want %q", name, b, err, want)
				}
			}
			writeTestFile(t, filepath.Join(leaf, "cpu.stat"), tc.stat)
			got, err := readThrottling(leaf)
			if want := (throttling{periods: 410, throttled: 16, waited: 1100 * time.Millisecond}); err != nil || got != want {
				t.Errorf("readThrottling = %+v, %v; want %+v", got, err, want)
			}
			if s := got.String(); !strings.Contains(s, "throttled in 16 of 410 periods of 100ms, 1.1s in all") {
				t.Errorf("throttling reads %q", s)
			}
		})
	}
}

// A machine with no cpu controller to be had says so, rather than run
// the servers unlimited under a header that says otherwise.
func TestCPUCgroupsNone(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "v2", "cgroup.controllers"), "memory pids")
	if _, err := newCPUCgroups([]cgroupRoot{{filepath.Join(dir, "v2"), true}, {filepath.Join(dir, "v1"), false}}, "run", 0.5); err == nil {
		t.Error("newCPUCgroups found a cpu controller where there is none")
	}
}

func writeTestFile(t *testing.T, name, v string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
}
