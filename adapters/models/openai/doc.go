// Package openai is the model provider for OpenAI and OpenAI-compatible servers (vLLM,
// Ollama, llama.cpp) through openai-go: it turns a turnlog model request into a Chat
// Completions call, streamed or not, and the answer back into text, tool calls and usage.
//
// It must never keep conversation state at the provider: no previous_response_id, no
// stored responses. The log is the only session store, so every call sends the whole
// request, and only per-call settings that are safe to replay cross into a call.
package openai
