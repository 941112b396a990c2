package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validator refuses tool arguments that do not fit the tool's input
// schema before its handler runs, with messages a model can act on ("at
// '/timeout': got string, want integer"). mcp-go can validate too, but
// prints the validator's internal structures; this uses the same
// validator (already in mcp-go's dependencies) and its own wording.
type validator struct {
	schemas map[string]*jsonschema.Schema
}

// newValidator compiles every tool's schema: a schema that does not
// compile is a bug of ours, found at start.
func newValidator(tools []mcp.Tool) (*validator, error) {
	v := &validator{schemas: map[string]*jsonschema.Schema{}}
	for _, t := range tools {
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %s: encode schema: %w", t.Name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("tool %s: read schema: %w", t.Name, err)
		}
		c := jsonschema.NewCompiler()
		url := "mem:///" + t.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		if v.schemas[t.Name], err = c.Compile(url); err != nil {
			return nil, fmt.Errorf("tool %s: compile schema: %w", t.Name, err)
		}
	}
	return v, nil
}

// middleware validates before the handler runs.
func (v *validator) middleware(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		schema, ok := v.schemas[req.Params.Name]
		if !ok {
			return next(ctx, req)
		}
		if msg := check(schema, req); msg != "" {
			return fail("invalid arguments for "+req.Params.Name+": "+msg, "Fix the arguments as the tool's input schema says and call it again."), nil
		}
		return next(ctx, req)
	}
}

// check returns what is wrong with the request's arguments, or "".
func check(schema *jsonschema.Schema, req mcp.CallToolRequest) string {
	raw := req.Params.RawArguments
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(req.Params.Arguments); err != nil {
			return "arguments are not JSON"
		}
	}
	if string(raw) == "null" {
		raw = []byte("{}")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return "arguments are not JSON"
	}
	err = schema.Validate(doc)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return ""
	}
	var out []string
	collect(verr, &out)
	return strings.Join(out, "; ")
}

// collect gathers the leaves of a validation error: the aggregating nodes
// ("anyOf failed") say nothing a model can act on.
func collect(e *jsonschema.ValidationError, out *[]string) {
	if len(e.Causes) == 0 {
		where := "/" + strings.Join(e.InstanceLocation, "/")
		line := strings.TrimPrefix(strings.TrimSpace(e.Error()), "jsonschema validation failed with ")
		if _, rest, ok := strings.Cut(line, "\n"); ok {
			line = rest
		}
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		if !strings.HasPrefix(line, "at ") {
			line = fmt.Sprintf("at '%s': %s", where, line)
		}
		*out = append(*out, line)
		return
	}
	for _, c := range e.Causes {
		collect(c, out)
	}
}
