/**
 * Modules a Temporal worker evaluates once per workflow thread and shares between its workflows
 * (the SDK's `bundlerOptions.preloadModules`, `worker/worker.ts`), where every other module of the
 * bundle is evaluated again for each workflow the worker starts, so that no workflow sees another's
 * module state. Listed: the protobuf descriptors of CEL's syntax and checked expressions and of
 * protobuf's well-known types, whose module scope builds them (~7 ms of the worker's CPU on a
 * 2-core machine, for every apply as much as for every pipeline), and which nothing changes once
 * built. The SDK freezes every preloaded module's exports, so this is only for modules that keep
 * no state in them: not for modules of ours, nor for the CEL library itself (its functions
 * remember their ids in themselves) or ajv (its code fragments remember their text). The replay
 * test (`test/workflows/replay.test.ts`) evaluates the recorded pipelines' expressions with these
 * frozen; `test/workflows/bundle.test.ts` checks that they are preloaded.
 */
import { file_cel_expr_checked } from '@bufbuild/cel-spec/cel/expr/checked_pb.js';
import { file_cel_expr_syntax } from '@bufbuild/cel-spec/cel/expr/syntax_pb.js';
import * as wellKnownTypes from '@bufbuild/protobuf/wkt';

/** What this module loads; used so the bundler keeps the imports, which it would otherwise drop as side-effect free. */
export const preloaded = [file_cel_expr_checked, file_cel_expr_syntax, wellKnownTypes];
