package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// transformScript reads and transforms SAM templates offline (see its
// docstring): the SAM transform exists only in Python.
//
//go:embed transform.py
var transformScript string

// Templates is one template as the checks see it: as written (bytes and
// data) and as the SAM transform leaves it for CloudFormation, or why the
// transform refused it.
type Templates struct {
	Raw []byte
	SAM map[string]any
	CFN map[string]any
	Err error
}

// Tools are the programs the checks run.
type Tools struct {
	Python  string // a python3 with cfn-lint (and the aws-sam-translator it brings)
	CfnLint string
}

// Transform reads each template and runs the SAM transform on it, all in
// one Python process (its start costs seconds). A template the transform
// refuses has its Err.
func (tl Tools) Transform(ctx context.Context, paths ...string) (map[string]Templates, error) {
	cmd := exec.CommandContext(ctx, tl.Python, append([]string{"-c", transformScript}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s (the SAM transform; it needs cfn-lint: pip install cfn-lint): %w\n%s", tl.Python, err, stderr.Bytes())
	}
	var got map[string]struct {
		SAM   map[string]any `json:"sam"`
		CFN   map[string]any `json:"cfn"`
		Error string         `json:"error"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return nil, fmt.Errorf("the SAM transform's output: %w", err)
	}
	res := map[string]Templates{}
	for _, p := range paths {
		g, ok := got[p]
		switch {
		case !ok:
			return nil, fmt.Errorf("the SAM transform said nothing of %s", p)
		case g.Error != "":
			res[p] = Templates{Err: errors.New(g.Error)}
		default:
			res[p] = Templates{SAM: g.SAM, CFN: g.CFN}
		}
	}
	return res, nil
}

// LintProblem is one of cfn-lint's findings.
type LintProblem struct {
	Rule    string // E1051, W1030, …
	Level   string // Error, Warning, Informational
	Message string
	File    string
	Line    int
}

// Lint runs cfn-lint on the templates, once for all of them, and returns
// its findings by file. cfn-lint transforms SAM templates itself.
func (tl Tools) Lint(ctx context.Context, paths ...string) (map[string][]LintProblem, error) {
	cmd := exec.CommandContext(ctx, tl.CfnLint, append([]string{"--format", "json", "--"}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// cfn-lint's exit status is a bit mask of the levels it found (2
	// errors, 4 warnings, 8 informational); anything else is its failure.
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode()&^(2|4|8) == 0) {
		return nil, fmt.Errorf("%s (pip install cfn-lint): %w\n%s", tl.CfnLint, err, stderr.Bytes())
	}
	var found []struct {
		Filename string
		Level    string
		Message  string
		Rule     struct{ Id string }
		Location struct{ Start struct{ LineNumber int } }
	}
	if err := json.Unmarshal(out, &found); err != nil {
		return nil, fmt.Errorf("cfn-lint's output: %w\n%s", err, stderr.Bytes())
	}
	res := map[string][]LintProblem{}
	for _, f := range found {
		res[f.Filename] = append(res[f.Filename], LintProblem{
			Rule: f.Rule.Id, Level: f.Level, Message: strings.TrimSpace(f.Message), File: f.Filename, Line: f.Location.Start.LineNumber,
		})
	}
	for _, probs := range res {
		slices.SortStableFunc(probs, func(a, b LintProblem) int { return a.Line - b.Line })
	}
	return res, nil
}
