package turnlog

import "github.com/turnlog/turnlog/config"

// ConfigSchema is agent.yaml's JSON Schema (config/agent.schema.json): LoadApps checks
// every config against it first.
var ConfigSchema = config.Schema

// ConfigReference is docs/config.md's reference, written from ConfigSchema.
func ConfigReference() (string, error) { return config.Reference() }

// ConfigError is one problem of a config: file, line, the key's path and what is wrong.
type ConfigError = config.Error

// ConfigErrors are several problems of a config, in the file's order.
type ConfigErrors = config.Errors
