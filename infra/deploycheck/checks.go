package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// AWS limits the SAM transform and cfn-lint do not check.
const (
	maxPolicyBytes      = 20_480    // a Lambda function's resource policy
	maxResources        = 500       // resources in one stack
	maxRoutes           = 300       // routes per HTTP API (a default quota)
	maxIntegrations     = 300       // integrations per HTTP API (a default quota)
	maxEnvBytes         = 4_096     // a function's environment variables, keys and values
	maxTemplateBytes    = 1_048_576 // a template body uploaded to S3
	maxTemplateBodyText = 51_200    // a template body passed in the request itself
)

// Level is how a Result counts.
type Level int

// The levels of a Result.
const (
	OK Level = iota
	Warn
	Fail
)

func (l Level) String() string { return [...]string{"ok", "warn", "FAIL"}[l] }

// Result is one verdict of one check.
type Result struct {
	Check string
	Level Level
	Text  string
}

func pass(check, format string, a ...any) Result {
	return Result{check, OK, fmt.Sprintf(format, a...)}
}

func warn(check, format string, a ...any) Result {
	return Result{check, Warn, fmt.Sprintf(format, a...)}
}

func fail(check, format string, a ...any) Result {
	return Result{check, Fail, fmt.Sprintf(format, a...)}
}

// The checks' names, as results carry them.
const (
	checkLint        = "cfn-lint"
	checkTransform   = "SAM transform"
	checkSize        = "template size"
	checkResources   = "resources"
	checkPolicy      = "resource policy"
	checkRoutes      = "routes"
	checkEnv         = "environment"
	checkNoEcho      = "guided: NoEcho"
	checkAuthPrompts = "guided: authorization"
)

// CheckLint fails on each of cfn-lint's errors and lists its warnings.
func CheckLint(probs []LintProblem) []Result {
	var out []Result
	errs := 0
	for _, p := range probs {
		r := Result{checkLint, OK, fmt.Sprintf("%s %s:%d: %s", p.Rule, p.File, p.Line, p.Message)}
		switch p.Level {
		case "Error":
			r.Level = Fail
			errs++
		case "Warning":
			r.Level = Warn
		default:
			continue
		}
		out = append(out, r)
	}
	if errs == 0 {
		out = append([]Result{pass(checkLint, "no errors")}, out...)
	}
	return out
}

// CheckTemplate runs every check but cfn-lint on t.
func CheckTemplate(t Templates) []Result {
	var out []Result
	out = append(out, checkSizes(t)...)
	out = append(out, checkResourceCount(t.CFN))
	out = append(out, checkPolicies(t.CFN)...)
	out = append(out, checkAPIRoutes(t.CFN)...)
	out = append(out, checkEnvironments(t.CFN)...)
	out = append(out, checkNoEchoParams(t.SAM)...)
	out = append(out, checkAuthorization(t.SAM)...)
	return out
}

func checkSizes(t Templates) []Result {
	n := len(t.Raw)
	processed, _ := json.Marshal(t.CFN)
	switch {
	case n > maxTemplateBytes:
		return []Result{fail(checkSize, "template.yaml is %d bytes; CloudFormation takes at most %d", n, maxTemplateBytes)}
	case len(processed) > maxTemplateBytes:
		return []Result{fail(checkSize, "the transformed template is %d bytes; CloudFormation takes at most %d", len(processed), maxTemplateBytes)}
	case n > maxTemplateBodyText:
		return []Result{pass(checkSize, "%d bytes (transformed %d) of %d: over the %d a request may carry, so it goes through S3 (sam deploy uploads it to its bucket)",
			n, len(processed), maxTemplateBytes, maxTemplateBodyText)}
	}
	return []Result{pass(checkSize, "%d bytes (transformed %d) of %d", n, len(processed), maxTemplateBytes)}
}

func checkResourceCount(cfn map[string]any) Result {
	n := len(mapOf(cfn["Resources"]))
	if n > maxResources {
		return fail(checkResources, "%d resources after the SAM transform; a stack holds at most %d", n, maxResources)
	}
	return pass(checkResources, "%d of %d", n, maxResources)
}

// resources returns the template's resources of type typ, by logical id.
func resources(cfn map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for name, r := range mapOf(cfn["Resources"]) {
		if res := mapOf(r); res["Type"] == typ {
			out[name] = res
		}
	}
	return out
}

// checkPolicies estimates each function's resource policy from the
// permissions naming it: one statement each.
func checkPolicies(cfn map[string]any) []Result {
	e := evaluator{cfn}
	fns := resources(cfn, "AWS::Lambda::Function")
	statements := map[string][]statement{}
	for name, perm := range resources(cfn, "AWS::Lambda::Permission") {
		props := mapOf(perm["Properties"])
		fn := refTarget(props["FunctionName"])
		if _, ok := fns[fn]; !ok {
			continue // a function of another stack
		}
		statements[fn] = append(statements[fn], e.statement(name, props))
	}
	var out []Result
	for _, fn := range slices.Sorted(maps.Keys(statements)) {
		n := policySize(statements[fn])
		if n > maxPolicyBytes {
			out = append(out, fail(checkPolicy, "%s: %d permissions make a policy of about %d bytes; Lambda takes at most %d (one permission for the whole API, not one per route)",
				fn, len(statements[fn]), n, maxPolicyBytes))
			continue
		}
		out = append(out, pass(checkPolicy, "%s: %d permission(s), about %d of %d bytes", fn, len(statements[fn]), n, maxPolicyBytes))
	}
	return out
}

// refTarget is the logical id v refers to (a Ref, or the resource of an
// Fn::GetAtt), "" for anything else.
func refTarget(v any) string {
	m := mapOf(v)
	if ref, ok := m["Ref"].(string); ok {
		return ref
	}
	if att := getAtt(m["Fn::GetAtt"]); len(att) == 2 {
		return att[0]
	}
	return ""
}

// checkAPIRoutes counts each HTTP API's routes and integrations: its
// OpenAPI body's operations (each with its own integration, as imported)
// and its Route and Integration resources.
func checkAPIRoutes(cfn map[string]any) []Result {
	routes, integrations := map[string]int{}, map[string]int{}
	for name, api := range resources(cfn, "AWS::ApiGatewayV2::Api") {
		routes[name] = 0 // an API without routes is still listed
		for _, item := range mapOf(dig(api, "Properties", "Body", "paths")) {
			for method, op := range mapOf(item) {
				if !isOperation(method) {
					continue
				}
				routes[name]++
				if mapOf(op)["x-amazon-apigateway-integration"] != nil {
					integrations[name]++
				}
			}
		}
	}
	count := func(typ string, into map[string]int) {
		for _, r := range resources(cfn, typ) {
			into[refTarget(dig(r, "Properties", "ApiId"))]++
		}
	}
	count("AWS::ApiGatewayV2::Route", routes)
	count("AWS::ApiGatewayV2::Integration", integrations)
	var out []Result
	for _, api := range slices.Sorted(maps.Keys(routes)) {
		r, i := routes[api], integrations[api]
		switch {
		case r > maxRoutes:
			out = append(out, fail(checkRoutes, "%s: %d routes; an HTTP API has at most %d (a quota AWS may raise on request)", api, r, maxRoutes))
		case i > maxIntegrations:
			out = append(out, fail(checkRoutes, "%s: %d integrations; an HTTP API has at most %d (a quota AWS may raise on request)", api, i, maxIntegrations))
		default:
			out = append(out, pass(checkRoutes, "%s: %d of %d routes, %d of %d integrations", api, r, maxRoutes, i, maxIntegrations))
		}
	}
	return out
}

// isOperation tells the operations of an OpenAPI path item from its other
// keys (parameters, summary, …).
func isOperation(key string) bool {
	switch strings.ToLower(key) {
	case "get", "put", "post", "delete", "options", "head", "patch", "trace", "x-amazon-apigateway-any-method":
		return true
	}
	return false
}

// checkEnvironments sums each function's variables as Lambda does: the
// bytes of every key and value.
func checkEnvironments(cfn map[string]any) []Result {
	e := evaluator{cfn}
	largest, largestFn := -1, ""
	var out []Result
	fns := resources(cfn, "AWS::Lambda::Function")
	for _, fn := range slices.Sorted(maps.Keys(fns)) {
		n := 0
		for k, v := range mapOf(e.resolve(dig(fns[fn], "Properties", "Environment", "Variables"))) {
			n += len(k) + len(e.str(v))
		}
		if n > maxEnvBytes {
			out = append(out, fail(checkEnv, "%s: environment variables of about %d bytes; Lambda takes at most %d", fn, n, maxEnvBytes))
		}
		if n > largest {
			largest, largestFn = n, fn
		}
	}
	if len(out) == 0 && largestFn != "" {
		out = append(out, pass(checkEnv, "largest %s, about %d of %d bytes", largestFn, largest, maxEnvBytes))
	}
	return out
}

// checkNoEchoParams: sam deploy --guided asks for a NoEcho parameter
// hidden, showing no default, and takes no empty answer.
func checkNoEchoParams(sam map[string]any) []Result {
	var out []Result
	params := mapOf(sam["Parameters"])
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if ne := mapOf(params[name])["NoEcho"]; ne == true || strings.EqualFold(fmt.Sprint(ne), "true") {
			out = append(out, fail(checkNoEcho, "parameter %s is NoEcho: sam deploy --guided asks for it hidden, without its default, and refuses an empty answer", name))
		}
	}
	if len(out) == 0 {
		out = append(out, pass(checkNoEcho, "no NoEcho parameter"))
	}
	return out
}

// checkAuthorization finds what makes sam deploy --guided ask "… may not
// have authorization defined, Is this okay?": an Api or HttpApi event of a
// function with no Auth (on the event, or on its API, or security in the
// API's DefinitionBody), and a FunctionUrlConfig with AuthType NONE. The
// prompt comes once per such event, and its default answer stops the deploy.
func checkAuthorization(sam map[string]any) []Result {
	res := mapOf(sam["Resources"])
	var out []Result
	for _, fn := range slices.Sorted(maps.Keys(res)) {
		r := mapOf(res[fn])
		if r["Type"] != "AWS::Serverless::Function" {
			continue
		}
		props := mapOf(r["Properties"])
		var prompts []string
		events := mapOf(props["Events"])
		for _, ev := range slices.Sorted(maps.Keys(events)) {
			event := mapOf(events[ev])
			idKey := map[any]string{"Api": "RestApiId", "HttpApi": "ApiId"}[event["Type"]]
			if idKey == "" {
				continue
			}
			ep := mapOf(event["Properties"])
			if ep["Auth"] != nil || apiHasAuth(mapOf(res[refTarget(ep[idKey])])) {
				continue
			}
			prompts = append(prompts, ev)
		}
		if url := mapOf(props["FunctionUrlConfig"]); url != nil && url["AuthType"] == "NONE" {
			prompts = append(prompts, "its Function URL")
		}
		if len(prompts) > 0 {
			out = append(out, fail(checkAuthPrompts, "%s: sam deploy --guided asks \"may not have authorization defined, Is this okay?\" %d time(s), for %s",
				fn, len(prompts), abbreviate(prompts, 5)))
		}
	}
	if len(out) == 0 {
		out = append(out, pass(checkAuthPrompts, "no function event without authorization"))
	}
	return out
}

// apiHasAuth: an API resource that sam deploy counts as authorized.
func apiHasAuth(api map[string]any) bool {
	props := mapOf(api["Properties"])
	if props["Auth"] != nil {
		return true
	}
	body := mapOf(props["DefinitionBody"])
	if body["security"] != nil {
		return true
	}
	for _, item := range mapOf(body["paths"]) {
		for _, op := range mapOf(item) {
			if mapOf(op)["security"] != nil {
				return true
			}
		}
	}
	return false
}

func abbreviate(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:n], ", "), len(s)-n)
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// dig follows keys down nested maps.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		v = mapOf(v)[k]
	}
	return v
}

// getAtt spells an Fn::GetAtt's argument as [resource, attribute].
func getAtt(v any) []string {
	switch a := v.(type) {
	case string:
		res, attr, ok := strings.Cut(a, ".")
		if ok {
			return []string{res, attr}
		}
	case []any:
		if len(a) == 2 {
			return []string{fmt.Sprint(a[0]), fmt.Sprint(a[1])}
		}
	}
	return nil
}

// subVar finds the ${Name} and ${Res.Attr} of an Fn::Sub (not ${!Literal}).
var subVar = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)
