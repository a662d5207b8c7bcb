/** Public API of the typed client. */
export { AcsClient } from './acs-client.ts';
export type { AcsClientOptions, BodyOf, PostOptions } from './acs-client.ts';
export { AcsApiError, NETWORK_ERROR } from './errors.ts';
export type { EventStreamRequest } from './event-stream.ts';
export type { ThreadStreamItem, ThreadStreamRequest } from './thread-stream.ts';
export type { StopResult } from './acs-client.ts';
