// A small OpenAI-compatible server around node-llama-cpp (llama.cpp), for the real-model
// tests (tests/test_real_model.py). Serves one GGUF model on 127.0.0.1 only:
//
//   node tests/llama_server.mjs --modules DIR --model FILE [--threads 1] [--context 4096]
//                                [--max-tokens 160] [--requests FILE]
//
// DIR is the node_modules folder that holds node-llama-cpp (.ci/install-test-tools puts it
// under .cache/test-tools/npm/node_modules). Prints `listening PORT` once it serves.
//
//   GET  /v1/models                 the one model, named after the file
//   GET  /props                     its context as llama.cpp's server says it
//                                   (default_generation_settings.n_ctx: --context)
//   POST /v1/chat/completions       messages (system, user, assistant with tool_calls,
//                                   tool), tools, stream true/false (with usage when
//                                   stream_options.include_usage), max_tokens, temperature
//
// The prompt is rendered with the model's own chat template (node-llama-cpp resolves the
// chat wrapper from the GGUF's metadata); tool calls are the wrapper's function calls.
// Requests are served one at a time. With --requests, each one is
// appended to FILE as a JSON line: {"request": body, "reply": {content, tool_calls, finish}}.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

const modules = option("modules");
const modelPath = option("model");
const threads = Number(option("threads", "1"));
const contextSize = Number(option("context", "4096"));
const maxTokensCap = Number(option("max-tokens", "160"));
const requestLog = option("requests");
if (!modules || !modelPath) {
  process.stderr.write("usage: llama_server.mjs --modules DIR --model FILE\n");
  process.exit(2);
}
const entry = path.join(modules, "node-llama-cpp", "dist", "index.js");
const { getLlama, LlamaChat } = await import(pathToFileURL(entry).href);

const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath });
// Two sequences, each with its own cache: a turn's requests (they offer tools) and the
// others (titles, summaries), so a title between two turns does not evict the turn's prefix.
const context = await model.createContext({ contextSize, threads, sequences: 2 });
const chats = [0, 1].map(() => new LlamaChat({ contextSequence: context.getSequence() }));
const modelId = path.basename(modelPath).replace(/\.gguf$/, "");
process.stderr.write(`chat template: ${chats[0].chatWrapper.wrapperName}\n`);

// Only what a GBNF grammar can hold: llama.cpp builds one from each tool's parameters.
function grammarSchema(schema) {
  if (schema === null || typeof schema !== "object") return { type: "string" };
  const out = {};
  if (Array.isArray(schema.enum)) out.enum = schema.enum;
  let type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (!type && schema.properties) type = "object";
  if (type) out.type = type;
  if (typeof schema.description === "string") out.description = schema.description;
  if (type === "object") {
    out.properties = {};
    for (const [key, value] of Object.entries(schema.properties ?? {})) {
      out.properties[key] = grammarSchema(value);
    }
  } else if (type === "array") {
    out.items = grammarSchema(schema.items ?? {});
  } else if (!type && !out.enum) {
    out.type = "string";
  }
  return out;
}

function text(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
  }
  return "";
}

// OpenAI messages as node-llama-cpp's chat history; a tool result joins its call.
function history(messages) {
  const items = [];
  const calls = new Map();
  for (const message of messages) {
    if (message.role === "system" || message.role === "developer") {
      items.push({ type: "system", text: text(message.content) });
    } else if (message.role === "user") {
      items.push({ type: "user", text: text(message.content) });
    } else if (message.role === "assistant") {
      const response = [];
      const said = text(message.content);
      if (said) response.push(said);
      for (const call of message.tool_calls ?? []) {
        let params = {};
        try {
          params = JSON.parse(call.function?.arguments || "{}");
        } catch {
          params = {};
        }
        const item = { type: "functionCall", name: call.function?.name ?? "", params, result: "" };
        calls.set(call.id, item);
        response.push(item);
      }
      items.push({ type: "model", response });
    } else if (message.role === "tool") {
      const call = calls.get(message.tool_call_id);
      if (call) call.result = text(message.content);
    }
  }
  return items;
}

function functions(tools) {
  const out = {};
  for (const tool of tools ?? []) {
    if (tool?.type !== "function" || !tool.function?.name) continue;
    out[tool.function.name] = {
      description: tool.function.description ?? "",
      params: grammarSchema(tool.function.parameters ?? { type: "object", properties: {} }),
    };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function tokens(value) {
  return model.tokenize(value).length;
}

let queue = Promise.resolve();
let callCount = 0;

async function complete(body, onText) {
  const items = history(body.messages ?? []);
  const offered = functions(body.tools);
  const maxTokens = Math.min(Number(body.max_tokens) || maxTokensCap, maxTokensCap);
  const chat = chats[offered ? 0 : 1];
  const result = await chat.generateResponse(items, {
    functions: offered,
    maxTokens,
    temperature: typeof body.temperature === "number" ? body.temperature : 0,
    onTextChunk: onText,
  });
  const toolCalls = (result.functionCalls ?? []).map((call) => ({
    id: `call_${++callCount}`,
    type: "function",
    function: { name: call.functionName, arguments: JSON.stringify(call.params ?? {}) },
  }));
  const stop = result.metadata.stopReason;
  const finish = toolCalls.length > 0 ? "tool_calls" : stop === "maxTokens" ? "length" : "stop";
  const prompt = (body.messages ?? []).map((m) => text(m.content)).join("\n");
  const usage = {
    prompt_tokens: tokens(prompt),
    completion_tokens: tokens(result.response),
    total_tokens: 0,
  };
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  if (requestLog) {
    const reply = { content: result.response, tool_calls: toolCalls, finish };
    fs.appendFileSync(requestLog, `${JSON.stringify({ request: body, reply })}\n`);
  }
  return { content: result.response, toolCalls, finish, usage };
}

function send(res, status, value) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

async function chatCompletions(body, res) {
  const id = `chatcmpl-${Date.now()}`;
  const created = Math.floor(Date.now() / 1000);
  const base = { id, created, model: modelId };
  if (!body.stream) {
    const done = await complete(body, undefined);
    const message = { role: "assistant", content: done.content };
    if (done.toolCalls.length > 0) message.tool_calls = done.toolCalls;
    send(res, 200, {
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message, finish_reason: done.finish }],
      usage: done.usage,
    });
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const event = (choices, extra = {}) =>
    res.write(`data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices, ...extra })}\n\n`);
  event([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
  const done = await complete(body, (chunk) => {
    event([{ index: 0, delta: { content: chunk }, finish_reason: null }]);
  });
  done.toolCalls.forEach((call, index) => {
    event([{ index: 0, delta: { tool_calls: [{ index, ...call }] }, finish_reason: null }]);
  });
  event([{ index: 0, delta: {}, finish_reason: done.finish }]);
  if (body.stream_options?.include_usage) event([], { usage: done.usage });
  res.write("data: [DONE]\n\n");
  res.end();
}

const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/v1/models") {
    send(res, 200, {
      object: "list",
      data: [{ id: modelId, object: "model", created: 0, owned_by: "llama.cpp" }],
    });
    return;
  }
  if (req.method === "GET" && req.url === "/props") {
    send(res, 200, {
      default_generation_settings: { id: 0, n_ctx: contextSize, params: {} },
      total_slots: 1,
      model_path: path.basename(modelPath),
    });
    return;
  }
  if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
    send(res, 404, { error: { message: "not found", type: "invalid_request_error" } });
    return;
  }
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      send(res, 400, { error: { message: "invalid JSON", type: "invalid_request_error" } });
      return;
    }
    queue = queue
      .then(() => chatCompletions(body, res))
      .catch((error) => {
        process.stderr.write(`request failed: ${error?.stack ?? error}\n`);
        if (!res.headersSent) send(res, 500, { error: { message: String(error), type: "server_error" } });
        else res.end();
      });
  });
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
