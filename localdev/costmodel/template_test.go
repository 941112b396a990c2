package main

import (
	"os"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/api"
)

// TestReadSizingOfTheTemplate reads the real template.yaml: a memory size
// for every route group's function, the poll task and its scaling.
func TestReadSizingOfTheTemplate(t *testing.T) {
	src, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	z, err := readSizing(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range api.Groups() {
		if mb := z.MemoryMB[string(g)]; mb < 128 || mb > 10240 {
			t.Errorf("%s: %d MB, want Lambda's 128 to 10,240", functionID(g), mb)
		}
	}
	if z.TaskVCPU <= 0 || z.TaskGB <= 0 || z.ConnsPerTask < 1 || z.MinTasks < 1 {
		t.Errorf("poll service sizing %+v, want a task with CPU and memory, connections per task and a minimum", z)
	}
}

// A template small enough to read at a glance: Globals' memory, one
// function of its own, the poll task and its parameters.
const smallTemplate = `
Parameters:
  PollConnectionsPerTask: {Type: Number, Default: 1500}
  PollMinTasks: {Type: Number, Default: 2}
Globals:
  Function:
    MemorySize: 256
Resources:
%s
  PollTaskDefinition:
    Type: AWS::ECS::TaskDefinition
    Properties: {Cpu: "1024", Memory: "2048"}
`

func functions(override string) string {
	var b strings.Builder
	for _, g := range api.Groups() {
		b.WriteString("  " + functionID(g) + ":\n    Type: AWS::Serverless::Function\n    Properties:\n      CodeUri: .\n")
		if g == api.GroupPoll {
			b.WriteString(override)
		}
	}
	return b.String()
}

func TestReadSizing(t *testing.T) {
	for _, c := range []struct {
		name, src string
		poll      int
		err       string
	}{
		{"Globals' memory", strings.Replace(smallTemplate, "%s", functions(""), 1), 256, ""},
		{"the function's own", strings.Replace(smallTemplate, "%s", functions("      MemorySize: 1024\n"), 1), 1024, ""},
		{"a parameter's memory cannot be priced", strings.Replace(smallTemplate, "%s", functions("      MemorySize: !Ref PollMemory\n"), 1), 0,
			"PollFunction.MemorySize"},
		{"a group without its function", strings.Replace(smallTemplate, "%s", "", 1), 0, "no function"},
	} {
		t.Run(c.name, func(t *testing.T) {
			z, err := readSizing([]byte(c.src))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("readSizing: %v, want an error naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if z.MemoryMB["poll"] != c.poll || z.MemoryMB["messages"] != 256 {
				t.Errorf("memory %v, want poll %d and the others 256", z.MemoryMB, c.poll)
			}
			if z.TaskVCPU != 1 || z.TaskGB != 2 || z.ConnsPerTask != 1500 || z.MinTasks != 2 {
				t.Errorf("poll service %+v, want 1 vCPU, 2 GB, 1,500 a task, at least 2", z)
			}
		})
	}
}

// TestParseStat reads /proc/<pid>/stat lines as PostgreSQL's processes
// write them: the command name holds spaces and parentheses.
func TestParseStat(t *testing.T) {
	line := "4242 (postgres: letagents (x) idle) S 4200 4200 4200 0 -1 4194560 1234 0 0 0 150 75 30 20 20 0 1 0 99 0 0\n"
	st, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if (st != stat{ppid: 4200, utime: 150, stime: 75, cutime: 30, cstime: 20}) {
		t.Errorf("parseStat = %+v", st)
	}
	for _, bad := range []string{"4242 postgres S", "4242 (postgres) S 1 2 3"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

// TestSchedule: every hourly action happens as often as it says, within
// the hour, in time order, whatever the agent's phase.
func TestSchedule(t *testing.T) {
	for _, phase := range []float64{0, 0.5, 0.99} {
		steps := schedule(phase)
		n := map[string]int{}
		for i, s := range steps {
			n[s.tool]++
			if s.at < 0 || s.at >= 3600e9 || (i > 0 && s.at < steps[i-1].at) {
				t.Errorf("phase %v: step %d %s at %v: outside the hour or out of order", phase, i, s.tool, s.at)
			}
		}
		for _, a := range hourly {
			if n[a.tool] != a.perHour {
				t.Errorf("phase %v: %s %d times, want %d", phase, a.tool, n[a.tool], a.perHour)
			}
		}
	}
}
