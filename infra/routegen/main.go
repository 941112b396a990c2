// Command routegen writes the routes of template.yaml from the route table
// of shared/api/routes.go, so that a route is written once: between
// "# begin generated openapi" and "# end generated openapi" it puts the
// HttpApi's OpenAPI body (every route and gateway path with its function's
// integration), between "# begin generated permissions" and "# end
// generated permissions" one invoke permission per function, and leaves
// every other line as it is. Run it from the module root (`make template`,
// or `go generate ./shared/api`); infra/template_test.go fails until it
// has been run.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/letagents/letagents-go/infra"
	"github.com/letagents/letagents-go/shared/api"
)

func main() {
	path := flag.String("template", "template.yaml", "the SAM template to rewrite in place")
	flag.Parse()
	if err := run(*path); err != nil {
		fmt.Fprintln(os.Stderr, "routegen:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := infra.RewriteRoutes(src, api.Routes())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if string(out) == string(src) {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, st.Mode().Perm())
}
