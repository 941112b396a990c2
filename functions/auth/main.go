// Command auth is the Lambda function serving sign-in (GitHub device and
// web flows, sessions) and the agents directory.
package main

import (
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/lambdaapi"
)

func main() { lambdaapi.Main(api.GroupAuth) }
