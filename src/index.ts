/**
 * hermes-mesh public API: what an actor author and a program embedding a mesh import, by name
 * (`import { defineActor, connectMesh } from "hermes-mesh"`). Everything else (the wire
 * protocol's pieces, connections, schedulers, the gateway app…) is internal: tests and tools
 * take it from "hermes-mesh/internal" (src/internal.ts), which may change in any release.
 */

// Writing an actor: a module whose default export is defineActor(...).
export { defineActor, type ActorDefinition } from "./actor/define-actor.ts";
export type { ActorContext, InitContext, Destination } from "./actor/actor-context.ts";
export type { ActorStore } from "./actor/actor-store.ts";

// Envelopes and errors, as handlers and callers see them.
export { MessageType, type Envelope, type Payload, type Route, type EnvelopeOptions } from "../mesh/envelope.ts";
export { ErrorCode, HermesError, type ErrorFields } from "../mesh/errors.ts";
export { MsgpackTimestamp, MsgpackExt } from "../mesh/msgpack-values.ts";
export type { RequestOptions } from "../mesh/requests.ts";
export { newMessageId } from "../mesh/ids.ts";
export { createLogger, type Logger } from "../mesh/logger.ts";

// A program talking to a running mesh, and members joining over any transport.
export { connectMesh, type MeshClient, type ConnectMeshOptions } from "./actor/connect-mesh.ts";
export type { DeadLetter, DeadLetterLimits } from "../mesh/peer-link.ts";
export type { MeshTransport, MeshLink } from "../mesh/transport.ts";
export { socketTransport } from "../mesh/socket-transport.ts";

// Running a mesh: mesh files, the supervisor tree, OTP building blocks.
export { loadMeshFile, parseMeshFile, type MeshFile } from "./supervisor/mesh-file.ts";
export { startMesh, type RunningMesh, type StartMeshOptions } from "./supervisor/mesh-runtime.ts";
export { Supervisor } from "./supervisor/supervisor.ts";
export { supervisorChild } from "./supervisor/supervisor-child.ts";
export { processChild } from "./supervisor/process-child.ts";
export { RestartType, Strategy, type ChildSpec } from "./supervisor/child-spec.ts";
export type { SupervisorOptions } from "./supervisor/supervisor-options.ts";
export type { SupervisorEvent } from "./supervisor/supervisor-events.ts";

// The agent layer: tools, models, memory, the loop.
export { defineTool, ToolRegistry, type ToolDefinition, type ToolContext } from "./agent/tool-registry.ts";
export { builtinTools } from "./agent/tools/builtin-tools.ts";
export { mountMcpServers, type McpMount, type McpServerConfig } from "./agent/mcp-tools.ts";
export type { ChatModel, ChatMessage } from "./agent/chat-types.ts";
export { OpenAICompatibleModel } from "./agent/openai-client.ts";
export { ScriptedModel } from "./agent/scripted-model.ts";
export { ShortTermMemory } from "./agent/short-term-memory.ts";
export { LongTermMemory } from "./agent/long-term-memory.ts";
export { loadAgentsFile } from "./agent/agent-config.ts";
export { runAgent, type AgentTask, type AgentOutcome } from "./agent/agent-loop.ts";

// Workflows and traces.
export { loadWorkflow, parseWorkflow } from "./workflow/workflow-loader.ts";
export type { WorkflowFile } from "./workflow/workflow-schema.ts";
export { readTrace, renderTrace, type Span } from "./observability/trace-tree.ts";
export { type LogEvent } from "./observability/event-log.ts";
export { readEvents } from "./observability/event-log-reader.ts";

export { VERSION } from "./version.ts";
