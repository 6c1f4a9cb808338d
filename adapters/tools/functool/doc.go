// Package functool turns Go functions into turnlog tools: the JSON schema comes from
// the argument struct (invopop/jsonschema), arguments are validated against it
// (santhosh-tekuri/jsonschema) with an error naming the offending field, then decoded.
//
// It must never decide policy or durability: the engine does that around every call.
package functool
