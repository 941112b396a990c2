package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var tools = Tools{Python: "python3", CfnLint: "cfn-lint"}

// base is template.yaml as the checks should pass it.
func base(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// insertAfter puts text after the first line matching re (which must
// exist) at or after the first match of after.
func insertAfter(t *testing.T, src, after, re, text string) string {
	t.Helper()
	from := strings.Index(src, after)
	loc := regexp.MustCompile(`(?m)` + re + `\n`).FindStringIndex(src[max(from, 0):])
	if from < 0 || loc == nil {
		t.Fatalf("template.yaml has no %q after %q to insert at", re, after)
	}
	at := from + loc[1]
	return src[:at] + text + src[at:]
}

func lines(n int, format string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format+"\n", i)
	}
	return b.String()
}

// failing returns the checks that failed and their texts.
func failing(results []Result) (checks []string, texts string) {
	set := map[string]bool{}
	for _, r := range results {
		if r.Level == Fail {
			set[r.Check] = true
			texts += r.Text + "\n"
		}
	}
	return slices.Sorted(maps.Keys(set)), texts
}

func write(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBreakEachCheck breaks each check once, in a copy of template.yaml,
// and wants exactly that check to fail, saying why; the unbroken copy
// passes all of them, cfn-lint included.
func TestBreakEachCheck(t *testing.T) {
	t.Parallel()
	src := base(t)
	const integ = `{x-amazon-apigateway-integration: {type: aws_proxy, httpMethod: POST, payloadFormatVersion: "2.0", uri: !Sub "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${WebFunction.Arn}/invocations"}, responses: {}}`
	events := func(n int) string {
		return "      Events:\n" + lines(n, "        Pad%d: {Type: HttpApi, Properties: {ApiId: !Ref HttpApi, Method: GET, Path: /pad%[1]d}}")
	}
	tests := []struct {
		name      string
		src       string
		wantFail  []string // the checks that fail
		wantInAll string   // in their texts
	}{
		{"routes past the quota", insertAfter(t, src, "# begin generated openapi", "^ +paths:", lines(130, "          /pad%d: {get: "+integ+"}")),
			[]string{checkRoutes}, " routes; an HTTP API has at most 300"},
		{"a permission per route", insertAfter(t, src, "  CoordinationFunction:\n", "^    Properties:", events(45)),
			[]string{checkAuthPrompts, checkPolicy}, "CoordinationFunction: 46 permissions make a policy of about"},
		{"an event without authorization", insertAfter(t, src, "  RoomsFunction:\n", "^    Properties:", events(1)),
			[]string{checkAuthPrompts}, `RoomsFunction: sam deploy --guided asks "may not have authorization defined, Is this okay?" 1 time(s), for Pad0`},
		{"a huge environment", insertAfter(t, src, "Globals:", "^      Variables:", "        LETAGENTS_PADDING: "+strings.Repeat("x", 4000)+"\n"),
			[]string{checkEnv}, "LivenessFunction: environment variables of about"},
		{"a NoEcho parameter", insertAfter(t, src, "Parameters:", "^Parameters:", "  Hidden:\n    Type: String\n    NoEcho: true\n    Default: x\n"),
			[]string{checkNoEcho}, "parameter Hidden is NoEcho: sam deploy --guided asks for it hidden"},
		{"over 500 resources", insertAfter(t, src, "Resources:", "^Resources:", lines(450, "  Pad%d: {Type: AWS::SNS::Topic}")),
			[]string{checkResources}, " resources after the SAM transform; a stack holds at most 500"},
		{"a template over 1 MB", src + "# " + strings.Repeat("x", maxTemplateBytes) + "\n",
			[]string{checkSize}, "bytes; CloudFormation takes at most 1048576"},
	}

	// cfn-lint takes long: it sees the unbroken copy and its own break only.
	dir := t.TempDir()
	good := write(t, dir, "good", src)
	lintBroken := write(t, dir, "lint", insertAfter(t, src, "Resources:", "^Resources:", "  Broken:\n    Type: AWS::SNS::Topic\n    Properties:\n      NoSuchProperty: 1\n"))
	linted, err := CheckAll(t.Context(), tools, good, lintBroken)
	if err != nil {
		t.Fatal(err)
	}
	if checks, texts := failing(linted[good]); len(checks) > 0 {
		t.Errorf("the unbroken template fails %v:\n%s", checks, texts)
	}
	if checks, texts := failing(linted[lintBroken]); !slices.Equal(checks, []string{checkLint}) || !strings.Contains(texts, "NoSuchProperty") {
		t.Errorf("with an unknown property, failing checks %v:\n%s\nwant cfn-lint alone, naming NoSuchProperty", checks, texts)
	}

	paths := make([]string, len(tests))
	for i, tt := range tests {
		paths[i] = write(t, dir, fmt.Sprint(i), tt.src)
	}
	tmpls, err := tools.Transform(t.Context(), paths...)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		tm := tmpls[paths[i]]
		if tm.Err != nil {
			t.Errorf("%s: %v", tt.name, tm.Err)
			continue
		}
		tm.Raw = []byte(tt.src)
		checks, texts := failing(CheckTemplate(tm))
		if !slices.Equal(checks, tt.wantFail) || !strings.Contains(texts, tt.wantInAll) {
			t.Errorf("%s: failing checks %v:\n%s\nwant %v, saying %q", tt.name, checks, texts, tt.wantFail, tt.wantInAll)
		}
	}
}

// TestTransformRefuses: a template the SAM transform refuses is a failed
// check naming the transform's reason, not a crash of the tool.
func TestTransformRefuses(t *testing.T) {
	t.Parallel()
	p := write(t, t.TempDir(), "bad", "Transform: AWS::Serverless-2016-10-31\nResources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties: {Runtime: provided.al2023, Handler: bootstrap, Events: {E: {Type: HttpApi, Properties: {Method: GET}}}}\n")
	tmpls, err := tools.Transform(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if e := tmpls[p].Err; e == nil || !strings.Contains(e.Error(), "Path") {
		t.Errorf("Transform of an HttpApi event without Path: %v, want the transform's complaint about Path", e)
	}
}
