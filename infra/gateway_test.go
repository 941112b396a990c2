package infra

import (
	"net/http"
	"strings"
	"testing"

	"github.com/letagents/letagents-go/shared/api"
)

// testRoutes is a small route table: a room route, which expands, and two
// without a room, one of them the root.
var testRoutes = []api.Route{
	{Group: api.GroupRooms, Method: http.MethodPost, Pattern: "/rooms/{room}/join"},
	{Group: api.GroupWeb, Method: http.MethodGet, Pattern: "/"},
	{Group: api.GroupWeb, Method: http.MethodGet, Pattern: "/api/health"},
	{Group: api.GroupWeb, Method: http.MethodPatch, Pattern: "/api/health"},
}

const (
	beginOpenAPI = "      # begin generated openapi (from shared/api/routes.go by `make template`; do not edit)\n"
	endOpenAPI   = "      # end generated openapi\n"
	beginPerms   = "  # begin generated permissions (from shared/api/routes.go by `make template`; do not edit)\n"
	endPerms     = "  # end generated permissions\n"
)

func TestRewriteRoutes(t *testing.T) {
	t.Parallel()
	integ := func(fn string) string {
		return `{type: aws_proxy, httpMethod: POST, payloadFormatVersion: "2.0", uri: !Sub "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${` + fn + `.Arn}/invocations"}`
	}
	r := func(n string) string { return "{name: " + n + ", in: path, required: true}" }
	openapi := "" +
		"      openapi: \"3.0.1\"\n" +
		"      info: {title: !Ref AWS::StackName, version: \"1.0\"}\n" +
		"      paths:\n" +
		"        \"/rooms/{r1}/join\":\n" +
		"          post: {x-amazon-apigateway-integration: " + integ("RoomsFunction") + ", parameters: [" + r("r1") + "], responses: {}}\n" +
		"        \"/rooms/{r1}/{r2}/join\":\n" +
		"          post: {x-amazon-apigateway-integration: " + integ("RoomsFunction") + ", parameters: [" + r("r1") + ", " + r("r2") + "], responses: {}}\n" +
		"        \"/rooms/{r1}/{r2}/{r3}/join\":\n" +
		"          post: {x-amazon-apigateway-integration: " + integ("RoomsFunction") + ", parameters: [" + r("r1") + ", " + r("r2") + ", " + r("r3") + "], responses: {}}\n" +
		"        /:\n" +
		"          get: {x-amazon-apigateway-integration: " + integ("WebFunction") + ", responses: {}}\n" +
		"        /api/health:\n" +
		"          get: {x-amazon-apigateway-integration: " + integ("WebFunction") + ", responses: {}}\n" +
		"          patch: {x-amazon-apigateway-integration: " + integ("WebFunction") + ", responses: {}}\n" +
		"        \"/{proxy+}\":\n" +
		"          x-amazon-apigateway-any-method: {x-amazon-apigateway-integration: " + integ("WebFunction") + ", parameters: [" + r("proxy+") + "], responses: {}}\n"
	perm := func(fn string) string {
		return "  " + fn + "ApiPermission:\n" +
			"    Type: AWS::Lambda::Permission\n" +
			"    Properties:\n" +
			"      Action: lambda:InvokeFunction\n" +
			"      FunctionName: !Ref " + fn + "\n" +
			"      Principal: apigateway.amazonaws.com\n" +
			"      SourceArn: !Sub \"arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpApi}/*\"\n"
	}
	perms := perm("RoomsFunction") + perm("WebFunction")
	// Everything outside the blocks must come back byte for byte, the
	// missing final newline and the odd indentation included.
	head := "Resources:\n  HttpApi:\n    Properties:\n     # a comment kept as it is\n      DefinitionBody:\n"
	mid := "\n"
	tail := "  WebFunction: {Type: AWS::Serverless::Function}\nOutputs: {}"
	want := head + beginOpenAPI + openapi + endOpenAPI + mid + beginPerms + perms + endPerms + tail

	tests := []struct {
		name string
		src  string
	}{
		{"empty blocks are filled", head + beginOpenAPI + endOpenAPI + mid + beginPerms + endPerms + tail},
		{"stale blocks are replaced", head + beginOpenAPI + "      paths: {}\n" + endOpenAPI + mid + beginPerms + perms + perms + endPerms + tail},
		{"a bare begin marker is rewritten", head + "      # begin generated openapi\n" + endOpenAPI + mid + beginPerms + endPerms + tail},
		{"up to date", want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := RewriteRoutes([]byte(tt.src), testRoutes)
			if err != nil {
				t.Fatalf("RewriteRoutes: %v", err)
			}
			if line, g, w, ok := firstDiff(string(got), want); ok {
				t.Errorf("line %d:\n got %q\nwant %q", line, g, w)
			}
		})
	}
}

func TestRewriteRoutesRefuses(t *testing.T) {
	t.Parallel()
	both := beginOpenAPI + endOpenAPI + beginPerms + endPerms
	tests := []struct {
		name, src string
		routes    []api.Route
		wantErr   string
	}{
		{"no permissions block", beginOpenAPI + endOpenAPI, testRoutes, "no block permissions"},
		{"no openapi block", beginPerms + endPerms, testRoutes, "no block openapi"},
		{"a block of no name known", both + "  # begin generated nosuch (x)\n  # end generated nosuch\n", testRoutes, `line 5: no generated block is called "nosuch"`},
		{"a second block", both + beginPerms + endPerms, testRoutes, "line 5: a second block permissions"},
		{"a block inside a block", beginOpenAPI + beginPerms + endPerms + endOpenAPI, testRoutes, "line 2: begin generated permissions inside the block openapi (line 1)"},
		{"an end of another block", beginOpenAPI + endPerms, testRoutes, `line 2: end generated permissions, but the open block is "openapi"`},
		{"an end without a begin", endPerms, testRoutes, `line 1: end generated permissions, but the open block is ""`},
		{"no end", beginPerms + endPerms + beginOpenAPI + "      paths: {}\n", testRoutes, "line 3: begin generated openapi has no end generated openapi"},
		{"a route twice", both, append(testRoutes[:1:1], testRoutes[0]), "route POST /rooms/{r1}/join twice"},
		{"a route of no group", both, []api.Route{{Method: "GET", Pattern: "/x"}}, "route GET /x has no group"},
		{"the catch-all in the table", both, []api.Route{{Group: api.GroupRooms, Method: "ANY", Pattern: "/{proxy+}"}}, "route ANY /{proxy+} twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := RewriteRoutes([]byte(tt.src), tt.routes)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("RewriteRoutes = %q, %v; want an error containing %q", got, err, tt.wantErr)
			}
		})
	}
}

func TestFunctionOf(t *testing.T) {
	t.Parallel()
	for g, want := range map[api.Group]string{api.GroupRooms: "RoomsFunction", api.GroupCoordination: "CoordinationFunction"} {
		if got := functionOf(g); got != want {
			t.Errorf("functionOf(%s) = %s, want %s", g, got, want)
		}
	}
}
