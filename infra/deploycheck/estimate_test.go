package main

import (
	"strings"
	"testing"
)

func TestEvaluatorStr(t *testing.T) {
	t.Parallel()
	e := evaluator{map[string]any{
		"Parameters": map[string]any{
			"Level": map[string]any{"Type": "String", "Default": "info", "AllowedValues": []any{"debug", "info", "warning"}},
			"Given": map[string]any{"Type": "String"},
		},
		"Resources": map[string]any{
			"Api": map[string]any{"Type": "AWS::ApiGatewayV2::Api"},
			"Fn":  map[string]any{"Type": "AWS::Lambda::Function"},
		},
	}}
	fnName := standInStack + "-Fn-ABCDEFGHIJKL"
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"a string", "x", "x"},
		{"a number", 2.0, "2"},
		{"pseudo parameters", map[string]any{"Fn::Sub": "${AWS::Partition}:${AWS::Region}:${AWS::AccountId}:${Api}/*"},
			standInPartition + ":" + standInRegion + ":" + standInAccount + ":" + standInAPIID + "/*"},
		{"a Sub's own variables and a literal", map[string]any{"Fn::Sub": []any{"${A}-${!B}", map[string]any{"A": "a"}}}, "a-${B}"},
		{"a function's ARN", map[string]any{"Fn::GetAtt": []any{"Fn", "Arn"}},
			"arn:" + standInPartition + ":lambda:" + standInRegion + ":" + standInAccount + ":function:" + fnName},
		{"a function's name", map[string]any{"Ref": "Fn"}, fnName},
		{"the longest allowed value", map[string]any{"Ref": "Level"}, "warning"},
		{"a value given at deploy", map[string]any{"Ref": "Given"}, strings.Repeat("p", standInValueLen)},
		{"Join", map[string]any{"Fn::Join": []any{",", []any{"a", map[string]any{"Ref": "Level"}}}}, "a,warning"},
		{"the longer branch of If", map[string]any{"Fn::If": []any{"C", "short", "longer one"}}, "longer one"},
		{"anything else", map[string]any{"Fn::ImportValue": "x"}, strings.Repeat("x", standInValueLen)},
	}
	for _, tt := range tests {
		if got := e.str(tt.v); got != tt.want {
			t.Errorf("%s: str(%v) = %q, want %q", tt.name, tt.v, got, tt.want)
		}
	}
}

// TestPolicySize holds the estimate to a policy written out by hand: one
// statement for an API, as Lambda spells it.
func TestPolicySize(t *testing.T) {
	t.Parallel()
	e := evaluator{map[string]any{"Resources": map[string]any{
		"Fn":  map[string]any{"Type": "AWS::Lambda::Function"},
		"Api": map[string]any{"Type": "AWS::ApiGatewayV2::Api"},
	}}}
	st := e.statement("FnPerm", map[string]any{
		"Action":       "lambda:InvokeFunction",
		"FunctionName": map[string]any{"Ref": "Fn"},
		"Principal":    "apigateway.amazonaws.com",
		"SourceArn":    map[string]any{"Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${Api}/*"},
	})
	want := `{"Version":"2012-10-17","Id":"default","Statement":[{"Sid":"` + standInStack + `-FnPerm-ABCDEFGHIJKL","Effect":"Allow",` +
		`"Principal":{"Service":"apigateway.amazonaws.com"},"Action":"lambda:InvokeFunction",` +
		`"Resource":"arn:aws-us-gov:lambda:ap-southeast-2:123456789012:function:` + standInStack + `-Fn-ABCDEFGHIJKL",` +
		`"Condition":{"ArnLike":{"AWS:SourceArn":"arn:aws-us-gov:execute-api:ap-southeast-2:123456789012:a1b2c3d4e5/*"}}}]}`
	if got := policySize([]statement{st}); got != len(want) {
		t.Errorf("policySize = %d, want %d (%s)", got, len(want), want)
	}
}
