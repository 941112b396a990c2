// Command liveness is the Lambda function an EventBridge schedule invokes
// every minute: one liveness sweep per invocation, posting the notices due
// about worker agents whose message channel went quiet or came back.
package main

import "github.com/letagents/letagents-go/shared/lambdaapi"

func main() { lambdaapi.MainSweeper() }
