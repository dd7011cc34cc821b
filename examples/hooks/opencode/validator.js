// validator as OpenCode's gate, through `validator hook opencode` (the adapter Claude Code,
// Codex and Gemini CLI use):
// - before each tool call (`tool.execute.before`) the call is judged by the same rules and
//   contract as the stop; a refused call throws, and the model reads the reason as the tool's
//   result; the same refusal `tools.stop_after` times in a row aborts the session;
// - after each tool call (`tool.execute.after`) what it changed is looked at, and what the stop
//   would fail is added to the output the model reads;
// - OpenCode has no blocking stop hook, so a session is judged when it goes idle, and on FAIL
//   validator's feedback goes back into the same session as its next message. The breakers
//   (max_attempts, strikes, drift, the budgets) end the loop as for the other agents: on
//   ESCALATED or BLOCKED nothing is sent and the session stays idle.
// The session's tokens (`max_tokens`) are its assistant messages' own counts, from
// `message.updated` events, the last figure of each message.
//
// Install it where the agent cannot edit it: ~/.config/opencode/plugin/ of a user the agent
// does not run as, or a read-only path named in the config's "plugin" list as
// "file:///ABSOLUTE/PATH/TO/validator.js" (a project's .opencode/plugin/ is the agent's to
// write). Set the two absolute paths below, or VALIDATOR_BIN and VALIDATOR_RULES in OpenCode's
// environment: a bare `validator` would be looked up on a PATH the project can shadow. It runs
// where OpenCode waits for plugins: the TUI and `opencode serve` (with `opencode run --attach`),
// not plain `opencode run`, which exits on its first idle.
import { spawn } from "node:child_process"
import { isAbsolute } from "node:path"

const VALIDATOR = process.env.VALIDATOR_BIN || "/ABSOLUTE/PATH/TO/validator"
const RULES = process.env.VALIDATOR_RULES || "/ABSOLUTE/PATH/TO/validator.yaml"
// Past validator's own budget (30 minutes by default): this only ends a process that hangs.
const TIMEOUT_MS = 2 * 60 * 60 * 1000
// validator's own deadline, a minute under that: by then it has answered (a stop not judged
// in time is refused), so this timeout never decides.
const DEADLINE = `${TIMEOUT_MS / 1000 - 60}s`
// What the session is told when validator itself was stopped before it could judge (this
// timeout, or a signal the gates' own commands sent): never a silent pass.
const INTERRUPTED =
  "# validator: not judged\n\nvalidator was stopped before it finished judging this session's " +
  "work, so the work is not accepted yet. Finish again."

// A tool call is judged without running anything: a minute is far more than it takes.
const TOOL_TIMEOUT_MS = 60 * 1000
const TOOL_DEADLINE = "50s"

/** Runs validator with `input` on stdin; its stdout, or null when it could not judge. */
function judge(input, cwd, deadline = DEADLINE, timeout = TIMEOUT_MS) {
  return new Promise((resolve) => {
    const args = ["-c", RULES, "hook", "opencode", "--task-dir", cwd, "--deadline", deadline]
    const child = spawn(VALIDATOR, args, {
      cwd,
      stdio: ["pipe", "pipe", "pipe"],
      timeout,
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("error", (err) => {
      console.error(`validator could not run: ${err.message}`)
      resolve(null)
    })
    child.on("close", (code, signal) => {
      if (signal) {
        console.error(`validator was stopped by ${signal} before it judged`)
        resolve(JSON.stringify({ decision: "block", reason: INTERRUPTED }))
        return
      }
      // Exit 1 is validator's "cannot judge" (broken rules, bad input): never a block.
      if (code !== 0) {
        console.error(`validator could not judge this stop (exit ${code}): ${stderr.trim()}`)
        resolve(null)
        return
      }
      resolve(stdout)
    })
    child.stdin.end(input)
  })
}

/** The text of the session's last assistant message. */
async function lastAssistantText(client, sessionID) {
  const response = await client.session.messages({ path: { id: sessionID } })
  const messages = response?.data ?? response ?? []
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]
    if (message?.info?.role !== "assistant") continue
    const text = (message.parts ?? [])
      .filter((part) => part?.type === "text" && typeof part.text === "string")
      .map((part) => part.text)
      .join("\n")
    // A lone surrogate would make the JSON validator reads invalid.
    return typeof text.toWellFormed === "function" ? text.toWellFormed() : text
  }
  return ""
}

export const ValidatorGate = async ({ client, directory }) => {
  const configured = isAbsolute(VALIDATOR) && isAbsolute(RULES)
  if (!configured) {
    console.error(
      "validator plugin: set VALIDATOR_BIN and VALIDATOR_RULES to absolute paths; nothing is judged until then",
    )
  }
  const judging = new Set()
  // Sessions that went idle again while being judged: judged once more when that ends.
  const again = new Set()
  // Each session's tokens: the last figure of each of its assistant messages.
  const tokens = new Map()
  const sessionTokens = (sessionID) => {
    let total = 0
    for (const count of (tokens.get(sessionID) ?? new Map()).values()) total += count
    return total
  }

  /** validator's answer to a tool event, parsed; null when it had none or could not judge. */
  const onTool = async (event, sessionID, tool, args, response) => {
    const input = {
      session_id: sessionID,
      cwd: directory,
      hook_event_name: event,
      tool_name: tool,
      tool_input: args ?? {},
      tokens: sessionTokens(sessionID),
    }
    if (response !== undefined) input.tool_response = response
    const answer = await judge(JSON.stringify(input), directory, TOOL_DEADLINE, TOOL_TIMEOUT_MS)
    if (!answer || !answer.trim()) return null
    try {
      return JSON.parse(answer)
    } catch {
      return null
    }
  }

  const onIdle = async (sessionID) => {
    if (judging.has(sessionID)) {
      again.add(sessionID)
      return
    }
    judging.add(sessionID)
    let reply = null
    try {
      const input = JSON.stringify({
        session_id: sessionID,
        cwd: directory,
        hook_event_name: "session.idle",
        last_assistant_message: await lastAssistantText(client, sessionID),
        tokens: sessionTokens(sessionID),
      })
      const answer = await judge(input, directory)
      reply = answer && answer.trim() ? JSON.parse(answer) : null
    } catch (err) {
      console.error(`validator plugin: ${err?.message ?? err}`)
    } finally {
      judging.delete(sessionID)
    }
    if (reply?.decision === "block" && typeof reply.reason === "string") {
      again.delete(sessionID) // the feedback starts a new turn, whose idle is judged
      // Not awaited: the session's next idle must find it free to judge again.
      client.session
        .prompt({ path: { id: sessionID }, body: { parts: [{ type: "text", text: reply.reason }] } })
        .catch((err) => console.error(`validator plugin: cannot send the feedback: ${err?.message ?? err}`))
      return
    }
    if (reply?.systemMessage) console.error(reply.systemMessage)
    if (again.delete(sessionID)) await onIdle(sessionID)
  }

  return {
    event: async ({ event }) => {
      if (!configured) return
      if (event?.type === "message.updated") {
        const info = event.properties?.info
        const total = info?.tokens?.total
        if (info?.role === "assistant" && info.sessionID && info.id && Number.isFinite(total)) {
          if (!tokens.has(info.sessionID)) tokens.set(info.sessionID, new Map())
          tokens.get(info.sessionID).set(info.id, total)
        }
        return
      }
      if (event?.type !== "session.idle") return
      const sessionID = event.properties?.sessionID
      if (sessionID) await onIdle(sessionID)
    },
    // Before the tool runs (and before OpenCode's own permission check, which still decides
    // what validator lets through): a refusal is thrown, and the model reads its reason.
    "tool.execute.before": async (input, output) => {
      if (!configured) return
      const reply = await onTool("tool.execute.before", input.sessionID, input.tool, output.args)
      if (reply?.decision !== "deny") {
        if (reply?.systemMessage) console.error(reply.systemMessage)
        return
      }
      if (reply.continue === false) {
        await client.session
          .abort({ path: { id: input.sessionID } })
          .catch((err) => console.error(`validator plugin: cannot stop the session: ${err?.message ?? err}`))
      }
      throw new Error(reply.reason)
    },
    // After it ran: what the stop would fail is added to what the model reads next.
    "tool.execute.after": async (input, output) => {
      if (!configured) return
      const response = { output: output?.output, exit: output?.metadata?.exit }
      const reply = await onTool("tool.execute.after", input.sessionID, input.tool, input.args, response)
      if (typeof reply?.tell === "string" && output && typeof output.output === "string") {
        output.output += `\n\n${reply.tell}`
      }
    },
  }
}
