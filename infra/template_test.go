package infra

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/global"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/config"
	"github.com/letagents/letagents-go/shared/liveness"
)

// root is the module root, where template.yaml and the Makefile live.
const root = ".."

// Settings every function must end up with, from Globals or itself.
const (
	wantRuntime      = "provided.al2023"
	wantHandler      = "bootstrap"
	wantArchitecture = "arm64"
	wantCodeURI      = "."
	wantBuildMethod  = "makefile"
	// secretParam is the parameter naming your database's secret; empty,
	// the stack creates the database, whose secret RDS keeps.
	secretParam = "DatabaseSecretArn"
	// dbSecretExpr is the database's secret wherever the template names it
	// (DB_SECRET_ARN, every function's policy, the poll task's role): the
	// created cluster's, or the parameter's. Fn::If takes its true branch
	// here, so it reads as createdSecret; checkDatabase holds every use of
	// the cluster's secret to the whole expression.
	dbSecretExpr  = "!If [MakeDatabase, !GetAtt DatabaseCluster.MasterUserSecret.SecretArn, !Ref DatabaseSecretArn]"
	createdSecret = "GetAtt:DatabaseCluster.MasterUserSecret.SecretArn"
	// dbSecret is the database's secret in wantPolicies.
	dbSecret = "the database's"
	// githubSecretParam names the GitHub app's secret, for the auth function.
	githubSecretParam = "GitHubSecretArn"
	// tokenKey is the KMS key that seals GitHub tokens.
	tokenKey = "TokenKey"
	// makeMarker starts the Makefile section holding the SAM build targets.
	makeMarker = "# --- SAM build targets (build-<LogicalId>) below this line ---"
	// makeGoarch is the Makefile variable the build targets take GOARCH
	// from: wantArchitecture unless a test builds for its own machine.
	makeGoarch = "LAMBDA_GOARCH"
)

// What the Ref, Fn::GetAtt and Fn::Sub handlers put in place of a
// reference: a marker naming its target, so the checks can see what a
// property refers to. (goformation's own Ref resolves a parameter to its
// Default and anything else to null, which would hide, say, which secret a
// policy grants.)
func refTo(name string) string    { return "Ref:" + name }
func getAttOf(path string) string { return "GetAtt:" + path }

// references records what the template's intrinsic functions point at
// while goformation processes them.
type references struct {
	refs       map[string][]string // Ref and ${Name} targets → where (function kind)
	getAtts    map[string]bool     // resources of Fn::GetAtt and ${Res.Attr}
	conditions map[string]bool     // conditions of Fn::If
	elses      map[string][]any    // the else branches of each condition's Fn::If
	problems   []string
}

var subVar = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

// handlers overrides goformation's intrinsic handlers with recording ones.
// Fn::If takes its true branch, so the checks see a conditional part (the
// VPC, the poll server, the proxy) as it is deployed when its condition
// holds; the else branches are kept in elses. A Ref to a Number parameter
// is its default, a number, as the properties holding one are typed
// (ports, capacities); where a string is wanted (environment variables)
// the template writes !Sub "${Param}".
func (r *references) handlers() map[string]intrinsics.IntrinsicHandler {
	return map[string]intrinsics.IntrinsicHandler{
		"Ref": func(_ string, input, tmpl any) any {
			name, ok := input.(string)
			if !ok {
				r.problems = append(r.problems, fmt.Sprintf("Ref of a %T (%v), want a name", input, input))
				return nil
			}
			r.refs[name] = append(r.refs[name], "Ref")
			if name == "AWS::NoValue" {
				return nil
			}
			switch typ, def := parameterOf(tmpl, name); {
			case typ == "Number":
				n, _ := strconv.ParseFloat(fmt.Sprint(def), 64)
				return n
			case typ == "CommaDelimitedList" || strings.HasPrefix(typ, "List<"):
				return []any{refTo(name)}
			}
			return refTo(name)
		},
		"Fn::GetAtt": func(_ string, input, _ any) any {
			var path string
			switch v := input.(type) {
			case string:
				path = v
			case []any:
				parts := make([]string, len(v))
				for i, p := range v {
					parts[i] = fmt.Sprint(p)
				}
				path = strings.Join(parts, ".")
			}
			res, _, ok := strings.Cut(path, ".")
			if !ok {
				r.problems = append(r.problems, fmt.Sprintf("Fn::GetAtt %v: want Resource.Attribute", input))
				return nil
			}
			r.getAtts[res] = true
			return getAttOf(path)
		},
		"Fn::Sub": func(_ string, input, _ any) any {
			tmplStr, local := "", map[string]any{}
			switch v := input.(type) {
			case string:
				tmplStr = v
			case []any:
				if len(v) == 2 {
					tmplStr, _ = v[0].(string)
					local, _ = v[1].(map[string]any)
				}
			}
			for _, m := range subVar.FindAllStringSubmatch(tmplStr, -1) {
				name := m[1]
				if _, ok := local[name]; ok {
					continue
				}
				if res, _, ok := strings.Cut(name, "."); ok {
					r.getAtts[res] = true
				} else {
					r.refs[name] = append(r.refs[name], "Fn::Sub")
				}
			}
			return tmplStr
		},
		"Fn::If": func(_ string, input, _ any) any {
			arr, ok := input.([]any)
			if !ok || len(arr) != 3 {
				r.problems = append(r.problems, fmt.Sprintf("Fn::If %v: want [condition, then, else]", input))
				return nil
			}
			name, _ := arr[0].(string)
			r.conditions[name] = true
			r.elses[name] = append(r.elses[name], arr[2])
			return arr[1]
		},
	}
}

// parameterOf returns the type and default the raw template declares for
// the parameter name ("" for no parameter).
func parameterOf(tmpl any, name string) (typ string, def any) {
	m, _ := tmpl.(map[string]any)
	params, _ := m["Parameters"].(map[string]any)
	p, _ := params[name].(map[string]any)
	typ, _ = p["Type"].(string)
	return typ, p["Default"]
}

// paramOf returns the parameter a value refers to: "Ref:Name" (a string
// parameter's Ref) or "${Name}" (a !Sub of just the parameter).
func paramOf(v string) (string, bool) {
	if name, ok := strings.CutPrefix(v, "Ref:"); ok {
		return name, true
	}
	if m := subVar.FindStringSubmatch(v); m != nil && m[0] == v && !strings.Contains(m[1], ".") {
		return m[1], true
	}
	return "", false
}

// invokedViaURL is the line that lets a Function URL invoke its function
// (both lambda:InvokeFunctionUrl and, so qualified, lambda:InvokeFunction
// are needed since October 2025).
const invokedViaURL = "      InvokedViaFunctionUrl: true"

// parsed is template.yaml as the checks see it.
type parsed struct {
	src    string // template.yaml as written
	tmpl   *cloudformation.Template
	global *global.Function
	fns    map[string]*serverless.Function
	refs   *references
}

// parseMu serialises goformation's parser, which registers its YAML tag
// resolvers in a package map on every call: parallel tests that parse the
// template would race on it.
var parseMu sync.Mutex

func parseTemplate(t *testing.T) parsed {
	t.Helper()
	refs := &references{refs: map[string][]string{}, getAtts: map[string]bool{}, conditions: map[string]bool{}, elses: map[string][]any{}}
	raw, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// goformation (v7.14.9) predates AWS::Lambda::Permission's
	// InvokedViaFunctionUrl (October 2025) and refuses unknown properties:
	// the line goes before parsing, and checkPoll asks for it in the text.
	src := []byte(strings.Replace(string(raw), "\n"+invokedViaURL, "", 1))
	parseMu.Lock()
	tmpl, err := goformation.ParseYAMLWithOptions(src, &intrinsics.ProcessorOptions{IntrinsicHandlerOverrides: refs.handlers()})
	parseMu.Unlock()
	if err != nil {
		t.Fatalf("parse template.yaml: %v", err)
	}
	for _, p := range refs.problems {
		t.Errorf("template.yaml: %s", p)
	}
	g, err := tmpl.GetServerlessGlobalFunction()
	if err != nil {
		t.Fatalf("template.yaml: Globals.Function: %v", err)
	}
	fns := tmpl.GetAllServerlessFunctionResources()
	if len(fns) == 0 {
		t.Fatal("template.yaml has no AWS::Serverless::Function")
	}
	return parsed{src: string(raw), tmpl: tmpl, global: g, fns: fns, refs: refs}
}

// env is a function's environment: Globals' variables overlaid with its own,
// as SAM merges them.
func (p parsed) env(fn *serverless.Function) map[string]string {
	vars := map[string]string{}
	if p.global.Environment != nil {
		maps.Copy(vars, p.global.Environment.Variables)
	}
	if fn.Environment != nil {
		maps.Copy(vars, fn.Environment.Variables)
	}
	return vars
}

// resolved replaces parameter references in vars by the parameters'
// defaults (a placeholder for required ones), as a deploy without
// overrides would set them.
func (p parsed) resolved(vars map[string]string) map[string]string {
	value := func(name string) string {
		if param, ok := p.tmpl.Parameters[name]; ok && param.Default != nil {
			return fmt.Sprint(param.Default)
		}
		return "value-given-at-deploy"
	}
	out := map[string]string{}
	for k, v := range vars {
		if name, ok := paramOf(v); ok {
			v = value(name)
		} else {
			// A parameter within a !Sub (https://${PollDomainName}/mcp):
			// one with no default, or an empty one, stands for the value a
			// deploy gives (a rule may require it, as PollDomainName's).
			v = subVar.ReplaceAllStringFunc(v, func(m string) string {
				name := subVar.FindStringSubmatch(m)[1]
				if _, isParam := p.tmpl.Parameters[name]; !isParam {
					return m
				}
				if d := value(name); d != "" {
					return d
				}
				return "value-given-at-deploy"
			})
		}
		out[k] = v
	}
	return out
}

// getenv makes a LoadConfig input of a variable map.
func getenv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestTemplate(t *testing.T) {
	t.Parallel()
	p := parseTemplate(t)
	if tr := p.tmpl.Transform; tr == nil || tr.String == nil || *tr.String != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform = %v, want AWS::Serverless-2016-10-31", tr)
	}
	targets := makeTargets(t)
	groupOf := checkFunctions(t, p, targets)
	fnOf := map[api.Group]string{}
	for name, g := range groupOf {
		if other, dup := fnOf[g]; dup {
			t.Errorf("functions %s and %s both build ./functions/%s", other, name, g)
		}
		fnOf[g] = name
	}
	for dir := range scheduled {
		if _, ok := fnOf[api.Group(dir)]; !ok {
			t.Errorf("scheduled function ./functions/%s has no function in template.yaml", dir)
		}
	}
	for _, rt := range api.Routes() {
		if _, ok := fnOf[rt.Group]; !ok {
			t.Errorf("route group %q (%s %s) has no function in template.yaml", rt.Group, rt.Method, rt.Pattern)
			fnOf[rt.Group] = "<missing " + string(rt.Group) + " function>"
		}
	}
	checkRoutes(t, p, fnOf)
	checkSchedules(t, p, groupOf)
	checkEnvironment(t, p)
	checkReferences(t, p)
	if _, ok := fnOf[migrateDir]; !ok {
		t.Errorf("./functions/%s has no function in template.yaml", migrateDir)
	}
	checkPoll(t, p, fnOf[api.GroupPoll])
	checkLiveness(t, p, fnOf[api.Group(livenessDir)])
	checkMigrate(t, p, fnOf[migrateDir])
	checkPollServer(t, p, fnOf[api.GroupPoll], targets)
	checkProxy(t, p)
	checkOutputs(t, p)
	checkEnvJSON(t, p)

	// A function without a usable build target is reported above.
	var pkgs []string
	for _, name := range slices.Sorted(maps.Keys(groupOf)) {
		pkgs = append(pkgs, "./functions/"+string(groupOf[name]))
	}
	t.Run("build", func(t *testing.T) {
		t.Parallel()
		goBuild(t, pkgs)
	})
}

// TestTemplateRoutes fails when template.yaml's generated blocks are not
// what the generator writes from api.Routes(): a route was added, changed or
// removed in shared/api/routes.go, or a generated line edited by hand.
func TestTemplateRoutes(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := RewriteRoutes(src, api.Routes())
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	if line, got, wantLine, ok := firstDiff(string(src), string(want)); ok {
		t.Errorf("template.yaml's routes differ from shared/api/routes.go: run `make template`\n"+
			"first difference, line %d:\n have %q\n want %q", line, got, wantLine)
	}
}

// firstDiff returns the first line where a and b differ, 1-based, with
// each side's text there ("" past its end).
func firstDiff(a, b string) (line int, aLine, bLine string, differ bool) {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(as), len(bs)) {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if x != y || i >= len(as) || i >= len(bs) {
			return i + 1, x, y, true
		}
	}
	return 0, "", "", false
}

// checkFunctions checks every function's runtime settings and build target,
// and returns the route group each one builds (its ./functions/<group>).
func checkFunctions(t *testing.T, p parsed, targets map[string][]string) map[string]api.Group {
	pkgRe := regexp.MustCompile(`(?:^|\s)\./functions/([A-Za-z0-9_-]+)(?:\s|$)`)
	groupOf := map[string]api.Group{}
	if got := makeDefault(t, makeGoarch); got != wantArchitecture {
		t.Errorf("Makefile: %s defaults to %q, want %q: sam build must build for the functions' Architectures", makeGoarch, got, wantArchitecture)
	}
	for name, fn := range p.fns {
		runtime := firstString(fn.Runtime, p.global.Runtime)
		handler := firstString(fn.Handler, p.global.Handler)
		arch := fn.Architectures
		if arch == nil && p.global.Architectures != nil {
			arch = *p.global.Architectures
		}
		if runtime != wantRuntime {
			t.Errorf("%s: Runtime = %q, want %q (in Globals.Function)", name, runtime, wantRuntime)
		}
		if handler != wantHandler {
			t.Errorf("%s: Handler = %q, want %q", name, handler, wantHandler)
		}
		if !slices.Equal(arch, []string{wantArchitecture}) {
			t.Errorf("%s: Architectures = %v, want [%s]", name, arch, wantArchitecture)
		}
		if fn.CodeUri == nil || fn.CodeUri.String == nil || *fn.CodeUri.String != wantCodeURI {
			t.Errorf("%s: CodeUri is not %q (the module has one go.mod; the Makefile picks the package)", name, wantCodeURI)
		}
		if bm, _ := fn.AWSCloudFormationMetadata["BuildMethod"].(string); bm != wantBuildMethod {
			t.Errorf("%s: Metadata.BuildMethod = %q, want %q", name, bm, wantBuildMethod)
		}

		target := "build-" + name
		recipe, ok := targets[target]
		if !ok {
			t.Errorf("%s: the Makefile has no target %s below %q", name, target, makeMarker)
			continue
		}
		cmd := strings.Join(recipe, "\n")
		for _, want := range []string{"GOOS=linux", "GOARCH=$(" + makeGoarch + ")", "CGO_ENABLED=0", "go build", "-tags lambda.norpc", "-o $(ARTIFACTS_DIR)/bootstrap"} {
			if !strings.Contains(cmd, want) {
				t.Errorf("Makefile %s: recipe %q lacks %q", target, cmd, want)
			}
		}
		m := pkgRe.FindAllStringSubmatch(cmd, -1)
		if len(m) != 1 {
			t.Errorf("Makefile %s: recipe %q should name exactly one ./functions/<dir>", target, cmd)
			continue
		}
		dir := m[0][1]
		if st, err := os.Stat(filepath.Join(root, "functions", dir)); err != nil || !st.IsDir() {
			t.Errorf("Makefile %s builds ./functions/%s, which is not a directory", target, dir)
			continue
		}
		groupOf[name] = api.Group(dir)
		checkPolicies(t, name, api.Group(dir), fn)
	}
	for target := range targets {
		if name, ok := strings.CutPrefix(target, "build-"); ok && p.fns[name] == nil {
			t.Errorf("Makefile target %s builds no function of template.yaml", target)
		}
	}
	return groupOf
}

// livenessDir is the scheduled liveness sweeper's ./functions/<dir>.
const livenessDir = "liveness"

// scheduled are the functions no route reaches, by ./functions/<dir>: an
// EventBridge schedule invokes each, through its one Schedule event, named
// here with its expression.
var scheduled = map[string]struct{ event, schedule string }{
	livenessDir: {"Sweep", "rate(1 minute)"},
}

// migrateDir is the migrate function's ./functions/<dir>: no route and no
// schedule reaches it, only CloudFormation, through the Migrate resource.
const migrateDir = "migrate"

// wantPolicies is each function's least privilege, by ./functions/<dir>
// (a route group's name, a scheduled function's, or migrate): every
// function reads the database secret; those that check repo access open
// sealed GitHub tokens (KMS Decrypt); only the auth function reads the
// GitHub app's secret and makes data keys to seal new tokens. The liveness
// sweeper and the migrations touch the database only.
var wantPolicies = map[api.Group][]string{
	api.GroupRooms:        {"decrypt " + tokenKey, "secret " + dbSecret},
	api.GroupMessages:     {"decrypt " + tokenKey, "secret " + dbSecret},
	api.GroupPoll:         {"decrypt " + tokenKey, "secret " + dbSecret},
	api.GroupWeb:          {"secret " + dbSecret},
	api.GroupCoordination: {"decrypt " + tokenKey, "secret " + dbSecret},
	api.GroupAuth:         {"decrypt " + tokenKey, "generate-data-key " + tokenKey, "secret " + dbSecret, "secret " + githubSecretParam},
	livenessDir:           {"secret " + dbSecret},
	migrateDir:            {"secret " + dbSecret},
}

// checkPolicies holds a function's policies to wantPolicies. SAM policy
// templates and inline statements may be mixed in one list; goformation
// reads such a list both ways, each element half empty in one of them.
func checkPolicies(t *testing.T, name string, group api.Group, fn *serverless.Function) {
	var got []string
	if fn.Policies != nil && fn.Policies.SAMPolicyTemplateArray != nil {
		for _, p := range *fn.Policies.SAMPolicyTemplateArray {
			switch {
			case p.AWSSecretsManagerGetSecretValuePolicy != nil && p.AWSSecretsManagerGetSecretValuePolicy.SecretArn == createdSecret:
				got = append(got, "secret "+dbSecret)
			case p.AWSSecretsManagerGetSecretValuePolicy != nil:
				got = append(got, "secret "+strings.TrimPrefix(p.AWSSecretsManagerGetSecretValuePolicy.SecretArn, "Ref:"))
			case p.KMSDecryptPolicy != nil:
				got = append(got, "decrypt "+strings.TrimPrefix(p.KMSDecryptPolicy.KeyId, "Ref:"))
			}
		}
	}
	if fn.Policies != nil && fn.Policies.IAMPolicyDocumentArray != nil {
		for _, doc := range *fn.Policies.IAMPolicyDocumentArray {
			for _, st := range doc.Statement {
				m, _ := st.(map[string]any)
				action, _ := m["Action"].(string)
				resource, _ := m["Resource"].(string)
				if m["Effect"] == "Allow" && action == "kms:GenerateDataKey" && resource == getAttOf(tokenKey+".Arn") {
					got = append(got, "generate-data-key "+tokenKey)
					continue
				}
				b, _ := json.Marshal(st)
				got = append(got, "statement "+string(b))
			}
		}
	}
	slices.Sort(got)
	want, known := wantPolicies[group]
	if !known {
		t.Errorf("%s builds ./functions/%s, which is no route group, scheduled function or the migrate function", name, group)
	}
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s: policies grant %q, want exactly %q", name, got, want)
	}
}

// checkRoutes holds the HttpApi's OpenAPI body to api.Routes(), expanded
// as the gateway needs (gatewayRoutes): every route key once, each a Lambda
// proxy integration (payload format 2.0) of its group's function, and
// nothing else. Each function that routes reach has exactly one permission
// for the whole API; no function has an Api or HttpApi event, whose
// permission per route would fill its resource policy and whose missing
// Auth would stop a guided deploy with a prompt per route.
func checkRoutes(t *testing.T, p parsed, fnOf map[api.Group]string) {
	routes, err := gatewayRoutes(api.Routes())
	if err != nil {
		t.Fatalf("the route table: %v", err)
	}
	want := map[string]string{} // route key → function
	for _, r := range routes {
		want[r.key()] = fnOf[r.Group]
		if fn := fnOf[r.Group]; fn != functionOf(r.Group) {
			t.Errorf("route group %q is deployed by %s; the generated routes name %s: call the function that", r.Group, fn, functionOf(r.Group))
		}
	}

	apis := p.tmpl.GetAllServerlessHttpApiResources()
	if len(apis) != 1 || apis[httpAPI] == nil {
		t.Fatalf("template.yaml has HttpApi resources %v, want exactly one, %s", slices.Sorted(maps.Keys(apis)), httpAPI)
	}
	body, _ := apis[httpAPI].DefinitionBody.(map[string]any)
	if v := body["openapi"]; v != "3.0.1" {
		t.Errorf("%s DefinitionBody: openapi %v, want 3.0.1 (SAM and sam local read 3.x)", httpAPI, v)
	}
	paths, _ := body["paths"].(map[string]any)
	got := map[string]string{} // route key → function
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			key := strings.ToUpper(method) + " " + path
			if method == "x-amazon-apigateway-any-method" {
				key = "ANY " + path
			}
			integ, _ := dig(op, "x-amazon-apigateway-integration").(map[string]any)
			uri, _ := integ["uri"].(string)
			m := integrationFunction.FindStringSubmatch(uri)
			if m == nil || integ["type"] != "aws_proxy" || integ["httpMethod"] != "POST" || integ["payloadFormatVersion"] != "2.0" {
				t.Errorf("route %s: integration %v, want aws_proxy, httpMethod POST, payloadFormatVersion 2.0 (lambdaapi speaks v2 only), uri !Sub of a function's ARN", key, integ)
				continue
			}
			got[key] = m[1]
		}
	}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		switch fn, ok := got[key]; {
		case !ok:
			t.Errorf("missing route %s (run `make template`)", key)
		case fn != want[key]:
			t.Errorf("route %s is served by %s, want %s (its group's function)", key, fn, want[key])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[key]; !ok {
			t.Errorf("extra route %s: no route of api.Routes() (nor the catch-all %s)", key, catchAll.key())
		}
	}

	served := map[string]bool{}
	for _, fn := range want {
		served[fn] = true
	}
	perms := map[string][]string{} // function → its API permissions
	for name, perm := range p.tmpl.GetAllLambdaPermissionResources() {
		if perm.Principal != "apigateway.amazonaws.com" {
			continue
		}
		fn, _ := strings.CutPrefix(perm.FunctionName, "Ref:")
		perms[fn] = append(perms[fn], name)
		if perm.Action != "lambda:InvokeFunction" || firstString(perm.SourceArn) != apiSourceARN {
			t.Errorf("%s: %s from %q, want lambda:InvokeFunction from the whole API, %q", name, perm.Action, firstString(perm.SourceArn), apiSourceARN)
		}
	}
	for _, fn := range slices.Sorted(maps.Keys(p.fns)) {
		if n := len(perms[fn]); served[fn] && n != 1 || !served[fn] && n != 0 {
			t.Errorf("%s: API Gateway permissions %v; want exactly one if routes reach it (%v), else none", fn, perms[fn], served[fn])
		}
		for evName, ev := range p.fns[fn].Events {
			if ev.Type == "Api" || ev.Type == "HttpApi" {
				t.Errorf("event %s.%s: Type %s; routes belong in %s's generated DefinitionBody (run `make template`)", fn, evName, ev.Type, httpAPI)
			}
		}
	}
}

// integrationFunction finds the function of an integration uri as
// writeOpenAPI spells it (Fn::Sub kept as its template string).
var integrationFunction = regexp.MustCompile(`^arn:\$\{AWS::Partition\}:apigateway:\$\{AWS::Region\}:lambda:path/2015-03-31/functions/\$\{([A-Za-z0-9]+)\.Arn\}/invocations$`)

// checkSchedules: a scheduled function has exactly its one Schedule event,
// enabled, with its expression; no other function has a Schedule event.
func checkSchedules(t *testing.T, p parsed, groupOf map[string]api.Group) {
	for fnName, fn := range p.fns {
		want, isScheduled := scheduled[string(groupOf[fnName])]
		var schedules []string
		for evName, ev := range fn.Events {
			where := fnName + "." + evName
			switch {
			case ev.Type == "Schedule" && !isScheduled:
				t.Errorf("event %s: a Schedule on %s, which serves routes, not a schedule", where, fnName)
			case ev.Type == "Schedule":
				schedules = append(schedules, evName)
				se := (*serverless.Function_ScheduleEvent)(nil)
				if ev.Properties != nil {
					se = ev.Properties.ScheduleEvent
				}
				switch {
				case se == nil:
					t.Errorf("event %s: Type Schedule without a Schedule expression", where)
				case se.Schedule != want.schedule:
					t.Errorf("event %s: Schedule %q, want %q", where, se.Schedule, want.schedule)
				case se.Enabled != nil && !*se.Enabled:
					t.Errorf("event %s: disabled", where)
				}
			case isScheduled:
				t.Errorf("event %s: Type %q on the scheduled function %s; it takes its Schedule event only", where, ev.Type, fnName)
			}
		}
		if isScheduled && (len(schedules) != 1 || schedules[0] != want.event) {
			t.Errorf("%s: Schedule events %v, want exactly one named %s (%s)", fnName, schedules, want.event, want.schedule)
		}
	}
}

// checkLiveness: the sweeper gets its notice grace from a parameter whose
// default and bounds are the code's, and finishes within its timeout.
func checkLiveness(t *testing.T, p parsed, name string) {
	fn := p.fns[name]
	if fn == nil {
		return // reported by TestTemplate
	}
	const variable = "LETAGENTS_LIVENESS_NOTICE_AFTER_MS"
	param, ok := paramOf(p.env(fn)[variable])
	if !ok {
		t.Errorf("%s: %s should come from a parameter", name, variable)
		return
	}
	par, ok := p.tmpl.Parameters[param]
	if !ok {
		return // reported by checkReferences
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) }
	if par.MinValue == nil || *par.MinValue != ms(liveness.MinNoticeAfter) || par.MaxValue == nil || *par.MaxValue != ms(liveness.MaxNoticeAfter) ||
		fmt.Sprint(par.Default) != fmt.Sprint(liveness.DefaultNoticeAfter.Milliseconds()) {
		t.Errorf("parameter %s (%s): Default %v, MinValue %v, MaxValue %v; want %d, %d, %d as config.Load accepts",
			param, variable, par.Default, deref(par.MinValue), deref(par.MaxValue),
			liveness.DefaultNoticeAfter.Milliseconds(), liveness.MinNoticeAfter.Milliseconds(), liveness.MaxNoticeAfter.Milliseconds())
	}
	if timeout := time.Duration(firstInt(fn.Timeout, p.global.Timeout)) * time.Second; timeout <= 0 || timeout > liveness.SweepInterval {
		t.Errorf("%s: Timeout %v, want at most the sweep interval %v, so runs do not pile up", name, timeout, liveness.SweepInterval)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkEnvironment holds the template's variables to config.Variables, and
// checks that each function's environment (with parameter defaults) loads.
func checkEnvironment(t *testing.T, p parsed) {
	known := map[string]bool{}
	for _, v := range config.Variables {
		known[v] = true
	}
	used := map[string]bool{}
	check := func(where string, vars map[string]string) {
		for k := range vars {
			used[k] = true
			if !known[k] {
				t.Errorf("%s sets %s, which the code never reads (not in config.Variables)", where, k)
			}
		}
	}
	if p.global.Environment != nil {
		check("Globals.Function", p.global.Environment.Variables)
	}
	for name, fn := range p.fns {
		if fn.Environment != nil {
			check(name, fn.Environment.Variables)
		}
		if _, err := config.Load(getenv(p.resolved(p.env(fn)))); err != nil {
			t.Errorf("%s: its environment with the parameters' defaults does not load: %v", name, err)
		}
	}
	if c, ok := p.container(t); ok {
		check(pollTaskDefinition, c.env)
	}
	if p.global.Environment == nil || p.global.Environment.Variables["DB_SECRET_ARN"] != createdSecret {
		t.Errorf("Globals.Function: DB_SECRET_ARN should be %s, the secret the policies grant", dbSecretExpr)
	}
	for _, v := range config.Variables {
		if !slices.Contains(config.LocalVariables, v) && !used[v] {
			t.Errorf("config.Variables has %s, which template.yaml never sets (nor is it in config.LocalVariables)", v)
		}
	}
	for _, v := range config.LocalVariables {
		if used[v] {
			t.Errorf("template.yaml sets %s, which config.LocalVariables says a deployment leaves unset", v)
		}
	}
	// The stack's private subnets or yours; with extra groups the stack's
	// own and those, without them its own.
	if vpc := p.global.VpcConfig; vpc == nil ||
		!slices.Equal(vpc.SubnetIds, privateSubnets) ||
		!slices.ContainsFunc(p.refs.elses["CreateVpc"], func(v any) bool { return fmt.Sprint(v) == fmt.Sprint([]any{refTo("SubnetIds")}) }) ||
		!slices.Equal(vpc.SecurityGroupIds, []string{refTo("FunctionSecurityGroup"), refTo("SecurityGroupIds")}) ||
		!slices.ContainsFunc(p.refs.elses["HasExtraSecurityGroups"], func(v any) bool {
			return fmt.Sprint(v) == fmt.Sprint([]any{refTo("FunctionSecurityGroup")})
		}) {
		t.Errorf("Globals.Function.VpcConfig = %+v, want the stack's private subnets (or the SubnetIds parameter) and FunctionSecurityGroup with the SecurityGroupIds parameter's", vpc)
	}
}

// conditionRef finds {"Condition": "Name"} in a condition's JSON.
var conditionRef = regexp.MustCompile(`\{"Condition":"([^"]+)"\}`)

// pseudo parameters of CloudFormation.
var pseudo = []string{"AWS::AccountId", "AWS::NotificationARNs", "AWS::NoValue", "AWS::Partition",
	"AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix"}

// checkReferences: every Ref names a parameter, resource or pseudo
// parameter; every parameter and condition is used.
func checkReferences(t *testing.T, p parsed) {
	// SAM makes <Function>Url for a function with FunctionUrlConfig.
	generated := map[string]bool{}
	for name, fn := range p.fns {
		if fn.FunctionUrlConfig != nil {
			generated[name+"Url"] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.refs.refs)) {
		_, isParam := p.tmpl.Parameters[name]
		_, isRes := p.tmpl.Resources[name]
		if !isParam && !isRes && !slices.Contains(pseudo, name) {
			t.Errorf("%s refers to %q, which is no parameter, resource or pseudo parameter", p.refs.refs[name][0], name)
		}
	}
	for _, res := range slices.Sorted(maps.Keys(p.refs.getAtts)) {
		if _, ok := p.tmpl.Resources[res]; !ok && !generated[res] {
			t.Errorf("Fn::GetAtt refers to %q, which is no resource (nor one SAM generates)", res)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.tmpl.Parameters)) {
		if len(p.refs.refs[name]) == 0 {
			t.Errorf("parameter %s is never used", name)
		}
	}
	used := maps.Clone(p.refs.conditions)
	for name := range p.tmpl.Resources {
		if c := p.raw(t, name)["Condition"]; c != nil {
			used[fmt.Sprint(c)] = true
		}
	}
	for _, out := range p.tmpl.Outputs {
		if out.Condition != nil {
			used[*out.Condition] = true
		}
	}
	for _, expr := range p.tmpl.Conditions {
		b, _ := json.Marshal(expr)
		for _, m := range conditionRef.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		if _, ok := p.tmpl.Conditions[name]; !ok {
			t.Errorf("condition %q is used but Conditions does not define it", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.tmpl.Conditions)) {
		if !used[name] {
			t.Errorf("condition %s is never used", name)
		}
	}
	// sam deploy --guided asks a NoEcho parameter hidden and refuses an
	// empty answer, whatever its default; and every parameter needs a
	// default a first deploy can take.
	for _, name := range slices.Sorted(maps.Keys(p.tmpl.Parameters)) {
		if param := p.tmpl.Parameters[name]; param.NoEcho != nil && *param.NoEcho {
			t.Errorf("parameter %s is NoEcho: sam deploy --guided cannot get past it with the default", name)
		} else if param.Default == nil {
			t.Errorf("parameter %s has no default: a first deploy must be able to take every default", name)
		}
	}
}

// checkPoll: the poll function holds long-polls through the gateway at
// most its hold, and, when no poll server is deployed, through its
// Function URL up to the poll maximum.
func checkPoll(t *testing.T, p parsed, name string) {
	fn := p.fns[name]
	if fn == nil {
		return
	}
	for other, f := range p.fns {
		if f.FunctionUrlConfig != nil {
			t.Errorf("%s has a FunctionUrlConfig; the poll function's URL is PollFunctionUrl, which exists only without a poll server", other)
		}
	}
	u := p.raw(t, "PollFunctionUrl")
	if u["Type"] != "AWS::Lambda::Url" || u["Condition"] != "WithoutContainer" ||
		dig(u, "Properties", "TargetFunctionArn") != getAttOf(name+".Arn") ||
		dig(u, "Properties", "AuthType") != "NONE" || dig(u, "Properties", "InvokeMode") != "BUFFERED" {
		t.Errorf("PollFunctionUrl = %v; want an AWS::Lambda::Url of %s, AuthType NONE, InvokeMode BUFFERED (the adapter buffers whole responses), under WithoutContainer", u, name)
	}
	// Both permissions, each for the URL only (the API's is checkRoutes').
	var perms []string
	for res := range p.tmpl.Resources {
		r := p.raw(t, res)
		if r["Type"] != "AWS::Lambda::Permission" || dig(r, "Properties", "FunctionName") != refTo(name) ||
			dig(r, "Properties", "Principal") == "apigateway.amazonaws.com" {
			continue
		}
		if r["Condition"] != "WithoutContainer" || dig(r, "Properties", "Principal") != "*" {
			t.Errorf("%s: a permission on %s should be for anyone (Principal *) and exist only WithoutContainer", res, name)
		}
		switch action := dig(r, "Properties", "Action"); {
		case action == "lambda:InvokeFunctionUrl" && dig(r, "Properties", "FunctionUrlAuthType") == "NONE":
			perms = append(perms, "url")
		case action == "lambda:InvokeFunction" && strings.Contains(p.src, res+":\n    Type: AWS::Lambda::Permission") &&
			strings.Contains(p.src[strings.Index(p.src, res+":\n"):], invokedViaURL):
			perms = append(perms, "invoke via url")
		default:
			t.Errorf("%s: %v on %s, want InvokeFunctionUrl (FunctionUrlAuthType NONE) or InvokeFunction InvokedViaFunctionUrl", res, action, name)
		}
	}
	if slices.Sort(perms); !slices.Equal(perms, []string{"invoke via url", "url"}) {
		t.Errorf("%s's URL permissions: %v; want InvokeFunctionUrl and InvokeFunction via the URL (both needed since October 2025)", name, perms)
	}
	env := p.env(fn)
	if env["LETAGENTS_GATEWAY_HOLD_MS"] == "" {
		t.Errorf("%s: sets no LETAGENTS_GATEWAY_HOLD_MS", name)
	}
	cfg, err := config.Load(getenv(p.resolved(env)))
	if err != nil {
		return // reported by checkEnvironment
	}
	timeout := time.Duration(firstInt(fn.Timeout, p.global.Timeout)) * time.Second
	if timeout <= cfg.PollMax {
		t.Errorf("%s: Timeout %v does not exceed the default poll maximum %v: long-polls through the URL would be cut", name, timeout, cfg.PollMax)
	}
	if param, ok := paramOf(env["LETAGENTS_POLL_MAX_MS"]); ok {
		if hi := p.tmpl.Parameters[param].MaxValue; hi == nil || time.Duration(*hi)*time.Millisecond > timeout {
			t.Errorf("parameter %s (LETAGENTS_POLL_MAX_MS) should have a MaxValue of at most %s's Timeout, %d ms", param, name, timeout.Milliseconds())
		}
	} else {
		t.Errorf("%s: LETAGENTS_POLL_MAX_MS should come from a parameter", name)
	}
	if cfg.GatewayHold >= 30*time.Second {
		t.Errorf("%s: gateway hold %v, want under API Gateway's 30 s", name, cfg.GatewayHold)
	}
}

// checkOutputs wants the API's URL and PollUrl: the poll server's (https
// with a certificate, else http), or without one the poll function's URL.
func checkOutputs(t *testing.T, p parsed) {
	apiURL, ok := p.tmpl.Outputs["ApiUrl"]
	if s, _ := apiURL.Value.(string); !ok || !strings.Contains(s, "${") {
		t.Errorf("output ApiUrl = %v, want the HTTP API's URL", apiURL.Value)
	}
	poll, ok := p.tmpl.Outputs["PollUrl"]
	want := []string{
		"https://${PollDomainName}",             // WithContainer and PollHttps
		"http://${PollLoadBalancer.DNSName}",    // WithContainer, no certificate
		getAttOf("PollFunctionUrl.FunctionUrl"), // WithoutContainer
	}
	got := []string{fmt.Sprint(poll.Value), fmt.Sprint(p.refs.elses["PollHttps"]), fmt.Sprint(p.refs.elses["WithContainer"])}
	if !ok || got[0] != want[0] || !strings.Contains(got[1], want[1]) || !strings.Contains(got[2], want[2]) {
		t.Errorf("output PollUrl: %q; want %q", got, want)
	}
}

// checkEnvJSON holds infra/env.json to the template: `sam local` only
// overrides variables a function declares, and the code refuses DB_URL and
// DB_SECRET_ARN together.
func checkEnvJSON(t *testing.T, p parsed) {
	b, err := os.ReadFile("env.json")
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]map[string]string
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("infra/env.json: want {\"Parameters\": {...}, \"<LogicalId>\": {...}} of strings: %v", err)
	}
	known := map[string]bool{}
	for _, v := range config.Variables {
		known[v] = true
	}
	shared := env["Parameters"]
	if shared == nil {
		t.Error("infra/env.json has no Parameters object")
	}
	for key, vars := range env {
		fn := p.fns[key]
		if key != "Parameters" && fn == nil {
			t.Errorf("infra/env.json has an object %q, which is no function of template.yaml", key)
			continue
		}
		declared := map[string]string{}
		if p.global.Environment != nil {
			maps.Copy(declared, p.global.Environment.Variables)
		}
		if fn != nil {
			declared = p.env(fn)
		}
		for k := range vars {
			if !known[k] {
				t.Errorf("infra/env.json %s sets %s, which is not in config.Variables", key, k)
			} else if _, ok := declared[k]; !ok {
				t.Errorf("infra/env.json %s sets %s, which template.yaml does not declare there: sam local would ignore it", key, k)
			}
		}
	}
	for name, fn := range p.fns {
		vars, ok := env[name]
		if !ok {
			t.Errorf("infra/env.json has no object for %s", name)
			continue
		}
		eff := p.resolved(p.env(fn))
		maps.Copy(eff, shared)
		maps.Copy(eff, vars)
		if eff["DB_URL"] == "" {
			t.Errorf("infra/env.json: %s gets no DB_URL", name)
		}
		if eff["DB_SECRET_ARN"] != "" {
			t.Errorf("infra/env.json: %s would get DB_URL and DB_SECRET_ARN %q; set DB_SECRET_ARN to \"\"", name, eff["DB_SECRET_ARN"])
		}
		// sam local has no AWS to reach: what needs it must be blanked.
		for _, v := range []string{"LETAGENTS_KMS_KEY_ID", "GITHUB_SECRET_ARN"} {
			if _, declared := p.env(fn)[v]; declared && eff[v] != "" {
				t.Errorf("infra/env.json: %s would get %s %q; set it to \"\" (sam local reaches no AWS)", name, v, eff[v])
			}
		}
		cfg, err := config.Load(getenv(eff))
		if err != nil {
			t.Errorf("infra/env.json: %s: %v", name, err)
			continue
		}
		// DB_HOST and the like, set for a created database, go only with
		// the secret: sam local must blank them beside DB_URL.
		if _, err := cfg.DB.ConnString(t.Context(), nil); err != nil {
			t.Errorf("infra/env.json: %s: %v", name, err)
		}
	}
}

// makeTargets returns the recipe lines of each target below makeMarker.
func makeTargets(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), makeMarker)
	if !ok {
		t.Fatalf("Makefile has no line %q", makeMarker)
	}
	targetRe := regexp.MustCompile(`^([A-Za-z0-9_.-]+)\s*:`)
	targets := map[string][]string{}
	current := ""
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "\t") {
			if current != "" {
				targets[current] = append(targets[current], strings.TrimSpace(line))
			}
			continue
		}
		current = ""
		if m := targetRe.FindStringSubmatch(line); m != nil && !strings.HasPrefix(m[1], ".") {
			current = m[1]
			targets[current] = nil
		}
	}
	return targets
}

// makeDefault returns the value the Makefile gives variable unless set
// (its `variable ?= value` line), "" if it gives none.
func makeDefault(t *testing.T, variable string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(variable) + `\s*\?=\s*(\S*)\s*$`).FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// goBuild builds pkgs as `sam build` does, for the Lambda runtime, in one
// go build: with a cold cache, one build per function run side by side
// each compiled every shared dependency for itself, and on a loaded 2-core
// machine that took the package past its 30 minutes. Given several main
// packages, go build compiles them and keeps nothing; its errors name the
// package.
func goBuild(t *testing.T, pkgs []string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool to build %v: %v", pkgs, err)
	}
	args := append([]string{"build", "-tags", "lambda.norpc", "-trimpath"}, pkgs...)
	cmd := exec.CommandContext(t.Context(), goTool, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func firstString(ps ...*string) string {
	for _, p := range ps {
		if p != nil {
			return *p
		}
	}
	return ""
}

func firstInt(ps ...*int) int {
	for _, p := range ps {
		if p != nil {
			return *p
		}
	}
	return 0
}
