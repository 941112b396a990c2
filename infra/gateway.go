package infra

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/letagents/letagents-go/shared/api"
)

// httpAPI is the logical name of the template's one HttpApi resource, whose
// DefinitionBody holds the routes.
const httpAPI = "HttpApi"

// The generated blocks of template.yaml, by the name their markers carry.
const (
	// blockOpenAPI is HttpApi's DefinitionBody: every route with its
	// integration, the function of its group.
	blockOpenAPI = "openapi"
	// blockPermissions holds one AWS::Lambda::Permission per function that
	// routes reach, for the whole API: one statement in each function's
	// resource policy however many routes it serves.
	blockPermissions = "permissions"
)

// gatewayRoute is one route of the HTTP API: a method ("ANY" for all) and
// a path as API Gateway spells it, and the group whose function serves it.
type gatewayRoute struct {
	Method, Path string
	Group        api.Group
}

// key is the route key API Gateway gives the route ("GET /rooms/{r1}").
func (r gatewayRoute) key() string { return r.Method + " " + r.Path }

// catchAll sends every path no route matches to the web function, so that
// clients see the API's JSON 404, never the gateway's own. It is the one
// route of the gateway beyond the route table.
var catchAll = gatewayRoute{Method: "ANY", Path: "/{proxy+}", Group: api.GroupWeb}

// gatewayRoutes spells routes as the gateway's: each route once per path
// API Gateway needs (Route.GatewayPaths), in table order, then catchAll.
// The gateway picks the most specific route for a request, whatever the
// order; a route key given twice is refused, as API Gateway would, and so
// is a route of no group.
func gatewayRoutes(routes []api.Route) ([]gatewayRoute, error) {
	var out []gatewayRoute
	seen := map[string]bool{}
	add := func(r gatewayRoute) error {
		if seen[r.key()] {
			return fmt.Errorf("route %s twice in the route table", r.key())
		}
		seen[r.key()] = true
		out = append(out, r)
		return nil
	}
	for _, rt := range routes {
		if rt.Group == "" {
			return nil, fmt.Errorf("route %s %s has no group: no function would serve it", rt.Method, rt.Pattern)
		}
		for _, path := range rt.GatewayPaths() {
			if err := add(gatewayRoute{Method: rt.Method, Path: path, Group: rt.Group}); err != nil {
				return nil, err
			}
		}
	}
	if err := add(catchAll); err != nil {
		return nil, err
	}
	return out, nil
}

// functionOf is the logical name of the function deploying group ("rooms"
// → RoomsFunction): the integrations and permissions name it, and
// infra/template_test.go holds the template's functions to it.
func functionOf(g api.Group) string {
	s := string(g)
	return strings.ToUpper(s[:1]) + s[1:] + "Function"
}

// permissionOf is the logical name of fn's permission for the HTTP API.
func permissionOf(fn string) string { return fn + "ApiPermission" }

// The markers around a generated block in template.yaml. The begin marker
// tells a reader not to edit the block by hand.
var (
	beginMarker = regexp.MustCompile(`^( *)# begin generated (\S+)(?:\s|$)`)
	endMarker   = regexp.MustCompile(`^ *# end generated (\S+)\s*$`)
)

// beginLine and endLine spell the markers of block at indent.
func beginLine(indent, block string) string {
	return fmt.Sprintf("%s# begin generated %s (from shared/api/routes.go by `make template`; do not edit)\n", indent, block)
}

func endLine(indent, block string) string {
	return fmt.Sprintf("%s# end generated %s\n", indent, block)
}

// RewriteRoutes returns the template src with the lines between the
// "# begin generated <block>" and "# end generated <block>" markers
// replaced by what routes make of that block, indented as its begin marker:
// blockOpenAPI, the lines under HttpApi's DefinitionBody, and
// blockPermissions, resources. A begin marker is rewritten in its standard
// words; every other byte is kept. Each block must appear exactly once.
func RewriteRoutes(src []byte, routes []api.Route) ([]byte, error) {
	gw, err := gatewayRoutes(routes)
	if err != nil {
		return nil, err
	}
	writers := map[string]func(*strings.Builder, string){
		blockOpenAPI:     func(b *strings.Builder, indent string) { writeOpenAPI(b, indent, gw) },
		blockPermissions: func(b *strings.Builder, indent string) { writePermissions(b, indent, gw) },
	}

	var out strings.Builder
	done := map[string]bool{}
	open, openAt := "", 0 // the block being replaced, and its line
	for n, line := range strings.SplitAfter(string(src), "\n") {
		lineNo := n + 1
		if m := beginMarker.FindStringSubmatch(line); m != nil {
			block := m[2]
			switch {
			case open != "":
				return nil, fmt.Errorf("line %d: begin generated %s inside the block %s (line %d)", lineNo, block, open, openAt)
			case done[block]:
				return nil, fmt.Errorf("line %d: a second block %s", lineNo, block)
			case writers[block] == nil:
				return nil, fmt.Errorf("line %d: no generated block is called %q (there are %q and %q)", lineNo, block, blockOpenAPI, blockPermissions)
			}
			open, openAt, done[block] = block, lineNo, true
			out.WriteString(beginLine(m[1], block))
			writers[block](&out, m[1])
			continue
		}
		if m := endMarker.FindStringSubmatch(line); m != nil {
			if m[1] != open {
				return nil, fmt.Errorf("line %d: end generated %s, but the open block is %q", lineNo, m[1], open)
			}
			out.WriteString(line)
			open = ""
			continue
		}
		if open == "" {
			out.WriteString(line)
		}
	}
	if open != "" {
		return nil, fmt.Errorf("line %d: begin generated %s has no end generated %s", openAt, open, open)
	}
	for _, block := range []string{blockOpenAPI, blockPermissions} {
		if !done[block] {
			return nil, fmt.Errorf("no block %s: put a %q line and a %q line where it goes", block,
				strings.TrimSpace(beginLine("", block)), strings.TrimSpace(endLine("", block)))
		}
	}
	return []byte(out.String()), nil
}

// integrationURI is a Lambda proxy integration's target as the SAM
// transform writes it for a function event: `sam local start-api` reads the
// function out of this Fn::Sub form (not out of a plain Fn::GetAtt).
const integrationURI = "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${%s.Arn}/invocations"

// writeOpenAPI writes the OpenAPI 3 document of routes at indent: per path
// (in order of first appearance) one line per method, each the Lambda proxy
// integration of its group's function with payload format 2.0, and the
// path's parameters, as the SAM transform used to write them for events.
func writeOpenAPI(b *strings.Builder, indent string, routes []gatewayRoute) {
	fmt.Fprintf(b, "%sopenapi: \"3.0.1\"\n", indent)
	fmt.Fprintf(b, "%sinfo: {title: !Ref AWS::StackName, version: \"1.0\"}\n", indent)
	fmt.Fprintf(b, "%spaths:\n", indent)
	var paths []string
	byPath := map[string][]gatewayRoute{}
	for _, r := range routes {
		if byPath[r.Path] == nil {
			paths = append(paths, r.Path)
		}
		byPath[r.Path] = append(byPath[r.Path], r)
	}
	for _, path := range paths {
		fmt.Fprintf(b, "%s  %s:\n", indent, yamlFlowScalar(path))
		params := pathParameters(path)
		for _, r := range byPath[path] {
			fmt.Fprintf(b, "%s    %s: {x-amazon-apigateway-integration: {type: aws_proxy, httpMethod: POST, payloadFormatVersion: \"2.0\", uri: !Sub %s}%s, responses: {}}\n",
				indent, openAPIMethod(r.Method), strconv.Quote(fmt.Sprintf(integrationURI, functionOf(r.Group))), params)
		}
	}
}

// openAPIMethod is method's key in an OpenAPI path item.
func openAPIMethod(method string) string {
	if method == "ANY" {
		return "x-amazon-apigateway-any-method"
	}
	return strings.ToLower(method)
}

// pathVar finds a path's parameters: {name}, or {name+} (greedy), whose
// name keeps its "+" as the SAM transform writes it.
var pathVar = regexp.MustCompile(`\{([A-Za-z0-9_]+\+?)\}`)

// pathParameters is the ", parameters: [...]" of an operation on path, ""
// when the path has none.
func pathParameters(path string) string {
	var ps []string
	for _, m := range pathVar.FindAllStringSubmatch(path, -1) {
		ps = append(ps, fmt.Sprintf("{name: %s, in: path, required: true}", m[1]))
	}
	if len(ps) == 0 {
		return ""
	}
	return ", parameters: [" + strings.Join(ps, ", ") + "]"
}

// apiSourceARN is every route of the HTTP API, any stage and method: the
// one source a function's permission names.
const apiSourceARN = "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${" + httpAPI + "}/*"

// writePermissions writes one permission per function that routes reach,
// in order of their groups' first route.
func writePermissions(b *strings.Builder, indent string, routes []gatewayRoute) {
	seen := map[api.Group]bool{}
	for _, r := range routes {
		if seen[r.Group] {
			continue
		}
		seen[r.Group] = true
		fn := functionOf(r.Group)
		fmt.Fprintf(b, "%s%s:\n", indent, permissionOf(fn))
		fmt.Fprintf(b, "%s  Type: AWS::Lambda::Permission\n", indent)
		fmt.Fprintf(b, "%s  Properties:\n", indent)
		fmt.Fprintf(b, "%s    Action: lambda:InvokeFunction\n", indent)
		fmt.Fprintf(b, "%s    FunctionName: !Ref %s\n", indent, fn)
		fmt.Fprintf(b, "%s    Principal: apigateway.amazonaws.com\n", indent)
		fmt.Fprintf(b, "%s    SourceArn: !Sub %s\n", indent, strconv.Quote(apiSourceARN))
	}
}

// yamlFlowScalar quotes s when it could not stand bare in a YAML flow
// mapping: braces, brackets, commas and ": " or " #" end or change it there.
func yamlFlowScalar(s string) string {
	if s == "" || strings.ContainsAny(s, "{}[],:#'\"\\ ") {
		return strconv.Quote(s)
	}
	return s
}
