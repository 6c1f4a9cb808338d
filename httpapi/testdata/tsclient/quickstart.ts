// The README's quickstart, and the approval after it, through a client generated
// from /openapi.yaml (openapi-typescript) and openapi-fetch. It must type-check with
// strict settings, and it runs against a served demo (TURNLOG_URL).
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

declare const process: { env: Record<string, string | undefined>; exitCode?: number };

type Item = components["schemas"]["Item"];
type Interrupt = components["schemas"]["Interrupt"];

// JSON answers: POST …/turns streams SSE only when asked (stream: true).
const client = createClient<paths, `${string}/json`>({ baseUrl: process.env.TURNLOG_URL ?? "http://127.0.0.1:8080" });

function fail(what: string, error: { error: { code: string; message: string } } | undefined): never {
  throw new Error(`${what}: ${error ? `${error.error.code}: ${error.error.message}` : "no answer"}`);
}

async function quickstart(): Promise<string[]> {
  const seen: string[] = [];
  // create a session of the demo app, with metadata of the caller's own
  const created = await client.POST("/v1/sessions", { body: { app: "demo", metadata: { ticket: 42 } } });
  if (!created.data) fail("create session", created.error);
  const id = created.data.id;
  const path = { params: { path: { id } } };
  seen.push(`session ${created.data.app} ${JSON.stringify(created.data.metadata)}`);

  // run a turn: the agent calls lookup_order and answers from its output
  const turn = await client.POST("/v1/sessions/{id}/turns", { ...path, body: { input: "where is order 42?" } });
  if (!turn.data) fail("run a turn", turn.error);
  if (!("output" in turn.data)) throw new Error("a turn run in the foreground answers its outcome");
  seen.push(`turn ${turn.data.status}: ${turn.data.output}`);

  // the committed conversation, and the raw events after seq 2
  const history = await client.GET("/v1/sessions/{id}/history", path);
  if (!history.data) fail("history", history.error);
  const calls = history.data.items.filter((it: Item) => it.type === "function_call").map((it: Item) => `${it.name}(${JSON.stringify(it.arguments)})`);
  seen.push(`calls ${calls.join(" ")}`);
  const evs = await client.GET("/v1/sessions/{id}/events", { params: { path: { id }, query: { after: 2 } } });
  if (!evs.data) fail("events", evs.error);
  seen.push(`events ${evs.data.events.map((e) => e.type).join(",")}`);

  // the refund needs a person: the turn suspends, and suspend_payload names the question
  const suspended = await client.POST("/v1/sessions/{id}/turns", { ...path, body: { input: "refund order 42" } });
  if (!suspended.data || !("suspend_payload" in suspended.data)) fail("refund", suspended.error);
  const question: Interrupt | null = suspended.data.suspend_payload;
  if (!question || question.kind !== "tool_approval") throw new Error("the refund did not wait for approval");
  seen.push(`waiting ${question.tool} ${JSON.stringify(question.arguments)}`);
  const pending = await client.GET("/v1/sessions/{id}/interrupts", path);
  if (!pending.data) fail("interrupts", pending.error);
  seen.push(`pending ${pending.data.interrupts.map((i) => `${i.kind}:${i.status}`).join(",")}`);
  const summary = await client.GET("/v1/sessions/{id}", path);
  if (!summary.data) fail("session", summary.error);
  seen.push(`status ${summary.data.status}`);

  // approve it; the turn resumes and the refund runs
  const done = await client.POST("/v1/sessions/{id}/turns", { ...path, body: { resume_map: { [question.id]: { confirmed: true } } } });
  if (!done.data || !("output" in done.data)) fail("approve", done.error);
  seen.push(`resumed ${done.data.status}: ${done.data.output}`);
  const audit = await client.GET("/v1/sessions/{id}/audit", path);
  if (!audit.data) fail("audit", audit.error);
  seen.push(`audit ${audit.data.audit.filter((a) => a.kind === "approval").map((a) => `${a.tool} ${a.outcome} by ${a.by}`).join(",")}`);

  // the types refuse what the API refuses
  // @ts-expect-error: metadata is an object
  void client.POST("/v1/sessions", { body: { app: "demo", metadata: "ticket 42" } });
  // @ts-expect-error: app is required
  void client.POST("/v1/sessions", { body: { metadata: {} } });
  // @ts-expect-error: confirmed is a boolean
  void client.POST("/v1/sessions/{id}/turns", { ...path, body: { resume_map: { x: { confirmed: "yes" } } } });
  return seen;
}

quickstart().then(
  (seen) => console.log(seen.join("\n")),
  (err: unknown) => {
    console.error(String(err));
    process.exitCode = 1;
  },
);
