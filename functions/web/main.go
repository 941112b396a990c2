// Command web is the Lambda function serving the web routes of the API.
package main

import (
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/lambdaapi"
)

func main() { lambdaapi.Main(api.GroupWeb) }
