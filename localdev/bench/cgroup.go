package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cpuPeriod is the CFS period the quotas are set over, the kernel's
// default and what a container runtime sets.
const cpuPeriod = 100 * time.Millisecond

// cpuCgroups holds the scale run's poll processes under a CPU quota each,
// as a container task is (the template's poll task has 0.5 vCPU): a
// cgroup of the run's own under root, with one leaf per process.
// Writing cgroups takes root; the cgroup v1 "cpu" controller and cgroup
// v2 are both understood.
type cpuCgroups struct {
	dir    string // the run's cgroup
	v2     bool
	quota  time.Duration // CPU time a process may use in each cpuPeriod
	leaves []string      // the processes' cgroups, made by leaf
}

// cgroupRoot is where a hierarchy with the cpu controller may be mounted.
type cgroupRoot struct {
	dir string
	v2  bool
}

// cgroupRoots are where Linux mounts the cpu controller, v2 first.
var cgroupRoots = []cgroupRoot{{"/sys/fs/cgroup", true}, {"/sys/fs/cgroup/cpu", false}, {"/sys/fs/cgroup/cpu,cpuacct", false}}

// newCPUCgroups makes the run's cgroup, named name, under the first of
// roots with a cpu controller, its processes each limited to cpus.
func newCPUCgroups(roots []cgroupRoot, name string, cpus float64) (*cpuCgroups, error) {
	for _, r := range roots {
		probe := "cpu.cfs_quota_us"
		if r.v2 {
			probe = "cgroup.controllers"
		}
		b, err := os.ReadFile(filepath.Join(r.dir, probe))
		if err != nil || (r.v2 && !slices.Contains(strings.Fields(string(b)), "cpu")) {
			continue
		}
		c := &cpuCgroups{dir: filepath.Join(r.dir, name), v2: r.v2, quota: time.Duration(cpus * float64(cpuPeriod))}
		if err := os.Mkdir(c.dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		if r.v2 {
			// A v2 cgroup's children get a controller only once their
			// parent hands it down.
			for _, d := range []string{r.dir, c.dir} {
				if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+cpu"), 0o644); err != nil {
					c.remove()
					return nil, fmt.Errorf("cgroup: enable cpu in %s: %w", d, err)
				}
			}
		}
		return c, nil
	}
	return nil, errors.New("cgroup: no cpu controller found (cgroup v2 with cpu, or v1's cpu) under /sys/fs/cgroup")
}

// leaf makes the cgroup of one process, with the quota, and returns its
// directory.
func (c *cpuCgroups) leaf(name string) (string, error) {
	dir := filepath.Join(c.dir, fmt.Sprintf("%s-%d", name, len(c.leaves)+1))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	c.leaves = append(c.leaves, dir)
	quota, period := c.quota.Microseconds(), cpuPeriod.Microseconds()
	writes := [][2]string{{"cpu.max", fmt.Sprintf("%d %d", quota, period)}}
	if !c.v2 { // the period first: a quota is checked against the period set
		writes = [][2]string{{"cpu.cfs_period_us", strconv.FormatInt(period, 10)}, {"cpu.cfs_quota_us", strconv.FormatInt(quota, 10)}}
	}
	for _, w := range writes {
		if err := os.WriteFile(filepath.Join(dir, w[0]), []byte(w[1]), 0o644); err != nil {
			return "", fmt.Errorf("cgroup: %s: %w", w[0], err)
		}
	}
	return dir, nil
}

// throttling is what a cgroup's cpu.stat says of its quota: the periods
// its processes ran in, those in which they used it up and waited, and
// how long they waited in all.
type throttling struct {
	periods, throttled int64
	waited             time.Duration
}

func (t throttling) add(u throttling) throttling {
	return throttling{t.periods + u.periods, t.throttled + u.throttled, t.waited + u.waited}
}

func (t throttling) sub(u throttling) throttling {
	return throttling{t.periods - u.periods, t.throttled - u.throttled, t.waited - u.waited}
}

func (t throttling) String() string {
	return fmt.Sprintf("throttled in %d of %d periods of %s, %s in all", t.throttled, t.periods, cpuPeriod, t.waited.Round(time.Millisecond))
}

// readThrottling reads the cpu.stat of cgroup dir (v1 gives the time
// waited in ns, v2 in µs).
func readThrottling(dir string) (throttling, error) {
	var t throttling
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return t, fmt.Errorf("cgroup: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "nr_periods":
			t.periods = n
		case "nr_throttled":
			t.throttled = n
		case "throttled_time":
			t.waited = time.Duration(n)
		case "throttled_usec":
			t.waited = time.Duration(n) * time.Microsecond
		}
	}
	return t, nil
}

// remove removes the run's cgroups, once their processes have exited.
func (c *cpuCgroups) remove() {
	for _, d := range c.leaves {
		_ = os.Remove(d)
	}
	_ = os.Remove(c.dir)
}
