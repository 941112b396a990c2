// Command deploycheck holds a SAM template to what a first deploy needs,
// offline (`make deploy-check`): cfn-lint without errors; the SAM
// transform, run as CloudFormation would run it; then the AWS limits
// neither checks — each function's resource policy (20,480 bytes), the
// stack's resources (500), the HTTP API's routes and integrations (300
// each), each function's environment (4 KB), the template's size — and
// what stops `sam deploy --guided`: a NoEcho parameter, and a function
// event without authorization (a prompt each). It prints one line per
// verdict and exits 1 when any check fails.
//
// It runs cfn-lint and python3 with the aws-sam-translator cfn-lint
// brings (pip install cfn-lint).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	path := flag.String("template", "template.yaml", "the SAM template to check")
	tools := Tools{}
	flag.StringVar(&tools.Python, "python", "python3", "a python3 that has cfn-lint installed")
	flag.StringVar(&tools.CfnLint, "cfn-lint", "cfn-lint", "the cfn-lint command")
	flag.Parse()
	failed, err := run(context.Background(), os.Stdout, tools, *path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploycheck:", err)
		os.Exit(1)
	}
	if failed > 0 {
		fmt.Printf("deploycheck: %d checks failed\n", failed)
		os.Exit(1)
	}
}

// run checks the template at path, writes the verdicts to w and returns
// how many failed.
func run(ctx context.Context, w io.Writer, tools Tools, path string) (failed int, err error) {
	results, err := CheckAll(ctx, tools, path)
	if err != nil {
		return 0, err
	}
	for _, r := range results[path] {
		fmt.Fprintf(w, "%-4s  %-21s  %s\n", r.Level, r.Check, r.Text)
		if r.Level == Fail {
			failed++
		}
	}
	return failed, nil
}

// CheckAll runs every check on each template (cfn-lint and the transform
// once for all of them) and returns the verdicts by path.
func CheckAll(ctx context.Context, tools Tools, paths ...string) (map[string][]Result, error) {
	lint, err := tools.Lint(ctx, paths...)
	if err != nil {
		return nil, err
	}
	tmpls, err := tools.Transform(ctx, paths...)
	if err != nil {
		return nil, err
	}
	out := map[string][]Result{}
	for _, p := range paths {
		t := tmpls[p]
		if t.Raw, err = os.ReadFile(p); err != nil {
			return nil, err
		}
		out[p] = CheckLint(lint[p])
		if t.Err != nil {
			out[p] = append(out[p], fail(checkTransform, "%v", t.Err))
			continue
		}
		out[p] = append(out[p], pass(checkTransform, "AWS::Serverless-2016-10-31 applies"))
		out[p] = append(out[p], CheckTemplate(t)...)
	}
	return out, nil
}
