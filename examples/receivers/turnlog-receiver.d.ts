// Types of turnlog-receiver.mjs for TypeScript.
/// <reference types="node" />
import type { IncomingHttpHeaders, Server } from 'node:http';

export declare const TOLERANCE: number;

/** A failure the model is told: status (4xx), and the message it reads. */
export declare class Refusal extends Error {
  constructor(status: number, message: string);
  status: number;
}

/** The Turnlog-* headers of a call, and its Idempotency-Key. */
export type Call = Record<string, string | string[] | undefined> & { key: string };

export type Handler = (args: any, call: Call) => Promise<unknown> | unknown;

export declare function verify(secrets: Buffer[], headers: IncomingHttpHeaders, method: string, target: string, body: Buffer, now?: number, tolerance?: number): boolean;

export declare class Receiver {
  constructor(secrets: Buffer[], routes: Record<string, Handler>);
  handle(method: string, target: string, headers: IncomingHttpHeaders, body: Buffer): Promise<[number, unknown]>;
  server(): Server;
}
