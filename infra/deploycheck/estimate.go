package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Stand-ins for what is known only once deployed, each at least as long as
// real values usually are, so that sizes are estimated high.
const (
	standInPartition = "aws-us-gov"
	standInRegion    = "ap-southeast-2"
	standInAccount   = "123456789012"
	standInStack     = "letagents-production-stack-name1" // 32 characters
	standInAPIID     = "a1b2c3d4e5"                       // HTTP API ids have 10
	// standInValue is any other value: a parameter given at deploy time,
	// an attribute such as an ARN or endpoint.
	standInValueLen = 128
	// CloudFormation names a function <stack>-<LogicalId>-<suffix>, cut to
	// Lambda's 64 characters; a statement id (the permission's physical
	// id) likewise, cut to 100.
	functionNameLen = 64
	statementIDLen  = 100
)

// evaluator resolves intrinsic functions of a transformed template to
// strings of a likely length.
type evaluator struct{ cfn map[string]any }

// str is v as a string once deployed, intrinsics replaced by stand-ins.
func (e evaluator) str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool, float64:
		return fmt.Sprint(x)
	case map[string]any:
		if len(x) == 1 {
			for fn, arg := range x {
				if s, ok := e.intrinsic(fn, arg); ok {
					return s
				}
			}
		}
	}
	return strings.Repeat("x", standInValueLen)
}

// resolve replaces a value that is one intrinsic function choosing between
// whole values (Fn::If) by its longer branch; anything else is kept.
func (e evaluator) resolve(v any) any {
	m := mapOf(v)
	if arg, ok := m["Fn::If"].([]any); ok && len(m) == 1 && len(arg) == 3 {
		a, b := e.resolve(arg[1]), e.resolve(arg[2])
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if len(jb) > len(ja) {
			return b
		}
		return a
	}
	return v
}

func (e evaluator) intrinsic(fn string, arg any) (string, bool) {
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		return e.ref(name), true
	case "Fn::GetAtt":
		return e.getAtt(getAtt(arg)), true
	case "Fn::Sub":
		tmpl, vars := "", map[string]any{}
		switch a := arg.(type) {
		case string:
			tmpl = a
		case []any:
			if len(a) == 2 {
				tmpl, _ = a[0].(string)
				vars = mapOf(a[1])
			}
		}
		s := subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
			name := m[2 : len(m)-1]
			if v, ok := vars[name]; ok {
				return e.str(v)
			}
			if res, attr, ok := strings.Cut(name, "."); ok {
				return e.getAtt([]string{res, attr})
			}
			return e.ref(name)
		})
		return strings.ReplaceAll(s, "${!", "${"), true
	case "Fn::Join":
		a, _ := arg.([]any)
		if len(a) != 2 {
			return "", false
		}
		items, _ := e.resolve(a[1]).([]any)
		parts := make([]string, len(items))
		for i, it := range items {
			parts[i] = e.str(it)
		}
		return strings.Join(parts, e.str(a[0])), true
	case "Fn::If":
		return e.str(e.resolve(map[string]any{fn: arg})), true
	}
	return "", false
}

// ref is what a Ref to name gives.
func (e evaluator) ref(name string) string {
	switch name {
	case "AWS::Partition":
		return standInPartition
	case "AWS::Region":
		return standInRegion
	case "AWS::AccountId":
		return standInAccount
	case "AWS::StackName":
		return standInStack
	case "AWS::URLSuffix":
		return "amazonaws.com.cn"
	case "AWS::NoValue":
		return ""
	}
	if p := mapOf(dig(e.cfn, "Parameters", name)); p != nil {
		// The longest value it may take: its default or any allowed value,
		// else a stand-in (a value given at deploy time).
		longest := e.str(p["Default"])
		allowed, _ := p["AllowedValues"].([]any)
		for _, v := range allowed {
			if s := e.str(v); len(s) > len(longest) {
				longest = s
			}
		}
		if allowed == nil && len(longest) < standInValueLen {
			longest = strings.Repeat("p", standInValueLen)
		}
		return longest
	}
	switch dig(e.cfn, "Resources", name, "Type") {
	case "AWS::Lambda::Function":
		return e.physicalName(name, functionNameLen)
	case "AWS::ApiGatewayV2::Api":
		return standInAPIID
	}
	return strings.Repeat("r", standInValueLen)
}

func (e evaluator) getAtt(att []string) string {
	if len(att) == 2 && att[1] == "Arn" && dig(e.cfn, "Resources", att[0], "Type") == "AWS::Lambda::Function" {
		return e.functionARN(att[0])
	}
	return strings.Repeat("a", standInValueLen)
}

// physicalName is the name CloudFormation makes for a resource:
// <stack>-<LogicalId>-<12 characters>, cut to max.
func (e evaluator) physicalName(logical string, max int) string {
	s := standInStack + "-" + logical + "-ABCDEFGHIJKL"
	return s[:min(len(s), max)]
}

func (e evaluator) functionARN(logical string) string {
	return "arn:" + standInPartition + ":lambda:" + standInRegion + ":" + standInAccount + ":function:" + e.physicalName(logical, functionNameLen)
}

// statement is one statement of a Lambda resource policy, as Lambda writes
// it for AddPermission (what CloudFormation calls for a permission).
type statement struct {
	Sid       string         `json:"Sid"`
	Effect    string         `json:"Effect"`
	Principal any            `json:"Principal"`
	Action    string         `json:"Action"`
	Resource  string         `json:"Resource"`
	Condition map[string]any `json:"Condition,omitempty"`
}

// statement is the statement a permission resource adds.
func (e evaluator) statement(logical string, props map[string]any) statement {
	st := statement{
		Sid:      e.physicalName(logical, statementIDLen),
		Effect:   "Allow",
		Action:   e.str(props["Action"]),
		Resource: e.functionARN(refTarget(props["FunctionName"])),
	}
	switch p := e.str(props["Principal"]); {
	case p == "*":
		st.Principal = "*"
	case strings.HasSuffix(p, ".amazonaws.com"):
		st.Principal = map[string]string{"Service": p}
	default:
		st.Principal = map[string]string{"AWS": p}
	}
	cond := map[string]map[string]string{}
	add := func(op, key string, v any) {
		if v == nil {
			return
		}
		if cond[op] == nil {
			cond[op] = map[string]string{}
		}
		cond[op][key] = e.str(v)
	}
	add("ArnLike", "AWS:SourceArn", props["SourceArn"])
	add("StringEquals", "AWS:SourceAccount", props["SourceAccount"])
	add("StringEquals", "lambda:FunctionUrlAuthType", props["FunctionUrlAuthType"])
	add("StringEquals", "aws:PrincipalOrgID", props["PrincipalOrgID"])
	add("Bool", "lambda:InvokedViaFunctionUrl", props["InvokedViaFunctionUrl"])
	if len(cond) > 0 {
		st.Condition = map[string]any{}
		for _, op := range []string{"ArnLike", "StringEquals", "Bool"} {
			if cond[op] != nil {
				st.Condition[op] = cond[op]
			}
		}
	}
	return st
}

// policySize is the bytes of the policy holding statements.
func policySize(statements []statement) int {
	b, _ := json.Marshal(struct {
		Version   string      `json:"Version"`
		ID        string      `json:"Id"`
		Statement []statement `json:"Statement"`
	}{"2012-10-17", "default", statements})
	return len(b)
}
