// Package demo is the offline demo app that `make run` serves: an order-support agent
// on the scripted model, with Go function tools over a small in-memory order book.
//
// It must never reach the network: every answer is computed from the data here.
package demo

import _ "embed"

// Config is the demo's agent.yaml.
//
//go:embed agent.yaml
var Config []byte
