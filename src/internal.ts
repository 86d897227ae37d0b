/**
 * hermes-mesh internals, for tests, benchmarks and tools (`import … from "hermes-mesh/internal"`):
 * the wire protocol's pieces, connections, the mesh node, the registry, schedulers, the
 * supervisor's parts, the gateway app, observability and agent-layer building blocks. Not a
 * stable API: names here may change in any release. Actor authors and embedding programs use
 * the public entry (src/index.ts).
 */
export * from "./index.ts";
export { MessageType, ControlType, HttpMsgType, ENVELOPE_TYPES, EnvelopeSchema, PayloadSchema, DEFAULT_TTL_MS, DEFAULT_PRIORITY, type Envelope, type Payload, isValidEnvelope, parseEnvelope, isPlainMap, arrivedExpired, remainingTtl, ttlDeadline, forwardEnvelope, createRequest, createEvent, createReply, createErrorReply, createCancel, type Route, type EnvelopeOptions } from "../mesh/envelope.ts";
export { ErrorCode, errorName, isErrorCode, type ErrorName, HermesError, type ErrorPayload, type ErrorFields } from "../mesh/errors.ts";
export { HelloSchema, AckSchema, PingSchema, PongSchema, ControlFrameSchema, PROTOCOL_VERSION, type Hello, type Ack, type Ping, type Pong, type ControlFrame, type ConnectionOptions } from "../mesh/handshake.ts";
export { CodecName, createPlainCodec, createRecordsCodec, createEnvelopeCodec, createCodec, negotiateCodec, SUPPORTED_CODECS, type FrameCodec, type EncodedRange } from "../mesh/codecs.ts";
export { FrameDecoder, DEFAULT_MAX_FRAME_BYTES, encodeFrame } from "../mesh/frames.ts";
export { newMessageId, isUlid, stableAgentId } from "../mesh/ids.ts";
export { parseAddress, formatAddress, type Address, listen, dial, Listener, type ListenOptions } from "../mesh/socket-transport.ts";
export { Connection, type ConnectionStatus } from "../mesh/connection.ts";
export { RequestChannel, type RequestContext, type RequestHandler, type RequestOptions } from "../mesh/requests.ts";
export { defineActor, type ActorDefinition } from "./actor/define-actor.ts";
export type { ActorContext, InitContext, Destination } from "./actor/actor-context.ts";
export type { ActorStore } from "./actor/actor-store.ts";
export { Mailbox } from "./actor/mailbox.ts";
export { createLogger, type Logger, type LogSink } from "../mesh/logger.ts";
export { connectMesh, type MeshClient, type ConnectMeshOptions } from "./actor/connect-mesh.ts";
export { Supervisor, type SupervisorState } from "./supervisor/supervisor.ts";
export { supervisorChild, type SupervisorChildOptions } from "./supervisor/supervisor-child.ts";
export type { SupervisorOptions } from "./supervisor/supervisor-options.ts";
export type { SupervisorEvent, SupervisorEventType, SupervisorListener, StopReason, SupervisorEndReason, RestartAbandonedReason } from "./supervisor/supervisor-events.ts";
export { RestartType, Strategy, ChildType, DEFAULT_SHUTDOWN_MS, isNormalExit, type ExitInfo, type ChildState, type ChildStatus, type ChildHandle, type ChildSpec } from "./supervisor/child-spec.ts";
export { processChild, type ProcessChildOptions } from "./supervisor/process-child.ts";
export { Backoff, type BackoffOptions } from "./supervisor/backoff.ts";
export { RestartIntensity, DEFAULT_INTENSITY, DEFAULT_PERIOD_MS } from "./supervisor/restart-intensity.ts";
export { loadMeshFile, parseMeshFile, listActors, MeshFileSchema, type MeshFile, type ActorSpec, type SupervisorSpec } from "./supervisor/mesh-file.ts";
export { startMesh, defaultMeshDir, type RunningMesh, type StartMeshOptions } from "./supervisor/mesh-runtime.ts";
export { type RegistryEntry, type ActorHealth, Registry, parseRegistryUpdate, type RegistryUpdate, type RegistryPatch, type SubscriberGroup } from "../mesh/registry.ts";
export { Scheduler, leastLoaded, roundRobin, weighted, type SchedulingStrategy, type SchedulingContext, type CallStats } from "../mesh/routing.ts";
export { TopicIndex, topicMatches, validatePattern, validateTopic } from "../mesh/topics.ts";
export { MeshNode, type MeshNodeOptions, type DeadLetter, type InboundEvent } from "../mesh/mesh-node.ts";
export { createGatewayApp, type GatewayDeps } from "./gateway/gateway-app.ts";
export { createMcpServer, DEFAULT_MCP_TIMEOUT_MS, TIMEOUT_META_KEY, type McpServerOptions, type MeshMcpServer, type McpMesh } from "./gateway/mcp-server.ts";
export { mountMcp, MCP_PATH, type McpRouteOptions } from "./gateway/mcp-route.ts";
export { AccessPolicy, isLoopback, type AccessSettings } from "./gateway/access-policy.ts";
export { EventLog, spansPathOf, type LogEvent } from "./observability/event-log.ts";
export { EventLogTail, readEvents } from "./observability/event-log-reader.ts";
export { SpanBatch, type SpanEvent, type HandledSpan } from "./observability/span-log.ts";
export { decodeSpans } from "./observability/span-log-reader.ts";
export { ActorMetrics, LATENCY_BUCKETS, type ActorStats } from "./observability/actor-metrics.ts";
export { formatMetrics, PROMETHEUS_CONTENT_TYPE, type MetricsSource } from "./observability/prometheus.ts";
export { spanIdOf, traceHexOf, formatTraceparent, parseTraceparent, childTraceparent } from "./observability/trace-context.ts";
export { readTrace, renderTrace, buildForest, type Span } from "./observability/trace-tree.ts";
export type { ChatMessage, ChatModel, ChatRequest, ChatResponse, ChatRole, ToolCall, ToolSpec, Usage, JsonSchema } from "./agent/chat-types.ts";
export { defineTool, ToolRegistry, DEFAULT_TOOL_TIMEOUT_MS, type ToolDefinition, type ToolContext, type ToolResult, type ToolEvent } from "./agent/tool-registry.ts";
export { builtinTools } from "./agent/tools/builtin-tools.ts";
export { evaluateExpression } from "./agent/calculator.ts";
export { OpenAICompatibleModel } from "./agent/openai-client.ts";
export { ScriptedModel, type ScriptedModelOptions, type ScriptTrack, type ScriptTurn } from "./agent/scripted-model.ts";
export { loadScript, parseScript } from "./agent/script-file.ts";
export { CircuitBreaker } from "./agent/circuit-breaker.ts";
export { UsageLedger } from "./agent/usage-ledger.ts";
export { ShortTermMemory, type Summariser } from "./agent/short-term-memory.ts";
export { LongTermMemory, type Fact } from "./agent/long-term-memory.ts";
export { startChain, extendChain, chainToMessages, readChain, withChain, type ContextChain } from "./agent/context-chain.ts";
export { loadAgentsFile, agentByName, scriptedProviderNotice, AgentConfigSchema, AgentsFileSchema, type AgentConfig, type AgentsFile } from "./agent/agent-config.ts";
export { runAgent, type AgentTask, type AgentOutcome, type ToolBox, type ConversationMemory, type FactRecall } from "./agent/agent-loop.ts";
export { loadWorkflow, parseWorkflow } from "./workflow/workflow-loader.ts";
export { WorkflowFileSchema, type WorkflowFile, type WorkflowNodeSpec, type RetryPolicy } from "./workflow/workflow-schema.ts";
export { WorkflowEngine, type StartRun, type RunSummary } from "./workflow/workflow-engine.ts";
export { VERSION } from "./version.ts";
