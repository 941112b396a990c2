// Command messages is the Lambda function serving the messages routes of the API.
package main

import (
	"github.com/letagents/letagents-go/shared/api"
	"github.com/letagents/letagents-go/shared/lambdaapi"
)

func main() { lambdaapi.Main(api.GroupMessages) }
