package main

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/letagents/letagents-go/shared/api"
)

// lambdaDefaultMemory is Lambda's MemorySize when neither a function nor
// Globals set one.
const lambdaDefaultMemory = 128

// Logical ids and parameters of template.yaml the model reads.
const (
	pollTaskDefinition = "PollTaskDefinition"
	paramConnsPerTask  = "PollConnectionsPerTask"
	paramMinTasks      = "PollMinTasks"
)

// functionID is the logical id of a route group's function: rooms →
// RoomsFunction.
func functionID(g api.Group) string {
	s := string(g)
	return strings.ToUpper(s[:1]) + s[1:] + "Function"
}

// readSizing reads from template.yaml what the bill depends on: each
// route group's function memory (its own MemorySize, else Globals', else
// Lambda's default), the poll task's CPU and memory, and the poll
// service's scaling parameters' defaults. The intrinsic functions' tags
// (!Ref, !Sub) are dropped in reading: a value given through one is
// refused, as it cannot be priced.
func readSizing(src []byte) (sizing, error) {
	var t struct {
		Globals struct {
			Function map[string]any `yaml:"Function"`
		} `yaml:"Globals"`
		Parameters map[string]struct {
			Default any `yaml:"Default"`
		} `yaml:"Parameters"`
		Resources map[string]struct {
			Type       string         `yaml:"Type"`
			Properties map[string]any `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(src, &t); err != nil {
		return sizing{}, fmt.Errorf("template.yaml: %w", err)
	}
	z := sizing{MemoryMB: map[string]int{}}
	def := lambdaDefaultMemory
	if v, ok := t.Globals.Function["MemorySize"]; ok {
		n, err := number(v)
		if err != nil {
			return z, fmt.Errorf("template.yaml: Globals.Function.MemorySize: %w", err)
		}
		def = int(n)
	}
	for _, g := range api.Groups() {
		id := functionID(g)
		r, ok := t.Resources[id]
		if !ok || r.Type != "AWS::Serverless::Function" {
			return z, fmt.Errorf("template.yaml: no function %s for the %s routes", id, g)
		}
		z.MemoryMB[string(g)] = def
		if v, ok := r.Properties["MemorySize"]; ok {
			n, err := number(v)
			if err != nil {
				return z, fmt.Errorf("template.yaml: %s.MemorySize: %w", id, err)
			}
			z.MemoryMB[string(g)] = int(n)
		}
	}
	task, ok := t.Resources[pollTaskDefinition]
	if !ok {
		return z, fmt.Errorf("template.yaml: no %s", pollTaskDefinition)
	}
	cpu, err := number(task.Properties["Cpu"])
	if err != nil {
		return z, fmt.Errorf("template.yaml: %s.Cpu: %w", pollTaskDefinition, err)
	}
	mem, err := number(task.Properties["Memory"])
	if err != nil {
		return z, fmt.Errorf("template.yaml: %s.Memory: %w", pollTaskDefinition, err)
	}
	z.TaskVCPU, z.TaskGB = cpu/1024, mem/1024
	for name, to := range map[string]*float64{paramConnsPerTask: &z.ConnsPerTask, paramMinTasks: &z.MinTasks} {
		if *to, err = number(t.Parameters[name].Default); err != nil {
			return z, fmt.Errorf("template.yaml: parameter %s's default: %w", name, err)
		}
	}
	return z, nil
}

// number reads a YAML scalar that holds a number, quoted or not.
func number(v any) (float64, error) {
	switch n := v.(type) {
	case int:
		return float64(n), nil
	case float64:
		return n, nil
	case string:
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", n)
		}
		return f, nil
	}
	return 0, fmt.Errorf("%v is not a number", v)
}
