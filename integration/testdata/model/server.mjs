// A small OpenAI-compatible chat server over a local GGUF model, for pikit's
// real-model tests: POST /v1/chat/completions (non-streaming or SSE) and
// GET /v1/models, on 127.0.0.1, with node-llama-cpp's prebuilt CPU build.
//
//   node server.mjs --model PATH [--port 0] [--context 4096] [--threads 2]
//                   [--max-tokens 1024] [--name MODEL] [--no-tools]
//
// It prints "listening http://127.0.0.1:PORT" on stdout once the model is
// loaded. Requests are answered one at a time, each from an empty context,
// so a reply at temperature 0 depends on its request only. Tools the request
// offers are passed to node-llama-cpp as functions (grammar-constrained
// calls in the chat template's own syntax) unless --no-tools is given;
// a tool whose schema the grammar cannot express is left out.
import http from "node:http";
import { getLlama, LlamaChat } from "node-llama-cpp";

function arg(name, dflt) {
  const i = process.argv.indexOf("--" + name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const modelPath = arg("model");
if (!modelPath) {
  console.error("server.mjs: --model PATH is required");
  process.exit(2);
}
const port = Number(arg("port", "0"));
const contextSize = Number(arg("context", "4096"));
const useTools = !process.argv.includes("--no-tools");
const modelName = arg("name", "smollm2-135m-instruct");
// maxTokens caps every reply, whatever a request asks: a test's time
// bound holds even for a client that asks for long answers.
const maxTokens = Number(arg("max-tokens", "1024"));

const threads = Number(arg("threads", "2"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error", maxThreads: threads });
const model = await llama.loadModel({ modelPath });
const context = await model.createContext({ contextSize, sequences: 1, threads });
const sequence = context.getSequence();

// text flattens OpenAI content (a string or a list of parts) to text.
function text(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p.text === "string" ? p.text : "")).join("");
  }
  return "";
}

// history maps OpenAI messages to node-llama-cpp's chat history: an
// assistant's tool calls become function calls whose results are the
// tool messages that answer them.
function history(messages) {
  const out = [];
  const calls = new Map(); // tool_call_id -> the function call item
  for (const m of messages) {
    switch (m.role) {
      case "system":
      case "developer":
        out.push({ type: "system", text: text(m.content) });
        break;
      case "user":
        out.push({ type: "user", text: text(m.content) });
        break;
      case "assistant": {
        const response = [];
        const t = text(m.content);
        if (t) response.push(t);
        for (const c of m.tool_calls || []) {
          let params = {};
          try {
            params = JSON.parse(c.function?.arguments || "{}");
          } catch {
            params = {};
          }
          const call = { type: "functionCall", name: c.function?.name || "", params, result: "" };
          calls.set(c.id, call);
          response.push(call);
        }
        out.push({ type: "model", response });
        break;
      }
      case "tool": {
        const call = calls.get(m.tool_call_id);
        if (call) call.result = text(m.content);
        else out.push({ type: "user", text: text(m.content) });
        break;
      }
    }
  }
  if (out.length === 0 || out[out.length - 1].type !== "model") {
    out.push({ type: "model", response: [] });
  }
  return out;
}

// simpleSchema keeps what the grammar can express: objects of strings,
// numbers, booleans and arrays of those, with required properties.
function simpleSchema(s) {
  if (!s || typeof s !== "object") return { type: "string" };
  switch (s.type) {
    case "string":
      return s.enum ? { enum: s.enum.filter((v) => typeof v === "string") } : { type: "string" };
    case "integer":
      return { type: "integer" };
    case "number":
      return { type: "number" };
    case "boolean":
      return { type: "boolean" };
    case "array":
      return { type: "array", items: simpleSchema(s.items) };
    case "object": {
      const properties = {};
      for (const [k, v] of Object.entries(s.properties || {})) properties[k] = simpleSchema(v);
      return { type: "object", properties };
    }
  }
  return { type: "string" };
}

function functions(tools) {
  if (!useTools || !Array.isArray(tools) || tools.length === 0) return undefined;
  const fns = {};
  for (const t of tools) {
    const f = t?.function;
    if (!f || typeof f.name !== "string") continue;
    fns[f.name] = { description: f.description || "", params: simpleSchema(f.parameters || { type: "object" }) };
  }
  return Object.keys(fns).length ? fns : undefined;
}

let queue = Promise.resolve();
let served = 0;

async function complete(req) {
  const fns = functions(req.tools);
  const opts = {
    maxTokens: Math.min(Number(req.max_tokens || req.max_completion_tokens || maxTokens), maxTokens),
    temperature: Number(req.temperature ?? 0),
    seed: Number(req.seed ?? 0),
  };
  if (fns && req.tool_choice !== "none") opts.functions = fns;
  // Each request starts from an empty sequence: a reply then depends on
  // its own messages only, not on what the previous request left in the
  // cache (reusing a prefix shifts the numbers enough to change a greedy
  // reply).
  await sequence.clearHistory();
  const chat = new LlamaChat({ contextSequence: sequence, autoDisposeSequence: false });
  let res;
  try {
    res = await chat.generateResponse(history(req.messages || []), opts);
  } finally {
    chat.dispose({ disposeSequence: false });
  }
  const calls = (res.functionCalls || []).map((c, i) => ({
    id: `call_${served}_${i}`,
    type: "function",
    function: { name: c.functionName, arguments: JSON.stringify(c.params ?? {}) },
  }));
  const finish = calls.length ? "tool_calls" : res.metadata.stopReason === "maxTokens" ? "length" : "stop";
  const prompt = (req.messages || []).map((m) => text(m.content)).join("\n");
  const promptTokens = model.tokenize(prompt).length;
  const completionTokens = model.tokenize(res.response).length;
  return {
    id: `chatcmpl-${++served}`,
    object: "chat.completion",
    created: 0,
    model: modelName,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: res.response, ...(calls.length ? { tool_calls: calls } : {}) },
        finish_reason: finish,
      },
    ],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    },
  };
}

function send(res, status, body) {
  const b = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(b) });
  res.end(b);
}

function sendStream(res, out) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const choice = out.choices[0];
  const delta = { role: "assistant", content: choice.message.content };
  if (choice.message.tool_calls) {
    delta.tool_calls = choice.message.tool_calls.map((c, index) => ({ index, ...c }));
  }
  const chunk = (d, finish) => ({
    id: out.id,
    object: "chat.completion.chunk",
    created: 0,
    model: out.model,
    choices: [{ index: 0, delta: d, finish_reason: finish }],
  });
  res.write(`data: ${JSON.stringify(chunk(delta, null))}\n\n`);
  res.write(`data: ${JSON.stringify({ ...chunk({}, choice.finish_reason), usage: out.usage })}\n\n`);
  res.end("data: [DONE]\n\n");
}

const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/v1/models") {
    return send(res, 200, { object: "list", data: [{ id: modelName, object: "model", owned_by: "local" }] });
  }
  if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
    return send(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: "not_found" } });
  }
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size > 8 << 20) req.destroy();
    else chunks.push(c);
  });
  req.on("end", () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch (e) {
      return send(res, 400, { error: { message: "the body is not JSON: " + e.message, type: "invalid_request_error" } });
    }
    if (!Array.isArray(body.messages)) {
      return send(res, 400, { error: { message: "messages: want a list", type: "invalid_request_error" } });
    }
    queue = queue.then(async () => {
      try {
        const out = await complete(body);
        if (body.stream) sendStream(res, out);
        else send(res, 200, out);
      } catch (e) {
        send(res, 500, { error: { message: String(e?.message || e), type: "server_error" } });
      }
    });
  });
});

server.listen(port, "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${server.address().port}`);
});
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => process.exit(0));
}
