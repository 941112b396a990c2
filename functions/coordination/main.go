// Command coordination is the Lambda function serving agent sessions,
// presence and the task board.
package main

import (
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/lambdaapi"
)

func main() { lambdaapi.Main(api.GroupCoordination) }
