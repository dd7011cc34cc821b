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
// - a validator that cannot be run (not there, not configured, not validator, an exit code, an
//   answer it cannot read) is never a pass: a tool call is refused, and an idle session is sent
//   "NOT JUDGED" with the reason (the person told in OpenCode's log) three times in a row at
//   most, then left idle for a person.
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

// How many idles in a row a session is held because validator could not answer (it cannot be
// started, is not validator, exits with an error, answers what no validator says): past this
// the session is left idle, stopped for a person, so a broken install never loops for ever.
const MAX_UNJUDGED = 3

/**
 * Runs validator with `args` and `input` on stdin: `{ stdout }` when it exited 0, `{ failed }`
 * (why, for the person) when it could not be run or exited with an error, `{ interrupted }`
 * when a signal ended it. Exit 1 is no verdict: validator answers every stop it cannot judge
 * itself (held), so an exit code is a validator that did not run as it should.
 */
function run(args, input, cwd, timeout) {
  return new Promise((resolve) => {
    if (!isAbsolute(VALIDATOR) || !isAbsolute(RULES)) {
      resolve({ failed: "VALIDATOR_BIN and VALIDATOR_RULES are not both set to absolute paths" })
      return
    }
    let child
    try {
      child = spawn(VALIDATOR, args, { cwd, stdio: ["pipe", "pipe", "pipe"] })
    } catch (err) {
      resolve({ failed: `it could not be started (${err?.message ?? err})` })
      return
    }
    // Killed past `timeout` (a signal, so answered as interrupted); the timer is cleared at the
    // end, which spawn's own `timeout` does not do for a program that never started.
    const timer = setTimeout(() => child.kill("SIGTERM"), timeout)
    const done = (answer) => {
      clearTimeout(timer)
      resolve(answer)
    }
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.stdin.on("error", () => {}) // a child that never reads its input is judged by its exit
    child.on("error", (err) => done({ failed: `it could not be started (${err.message})` }))
    child.on("close", (code, signal) => {
      if (signal) done({ interrupted: signal })
      else if (code !== 0) {
        const said = stderr.trim().split("\n").slice(-3).join(" ").slice(0, 500)
        done({ failed: `it exited ${code} with no answer${said ? `: ${said}` : ""}` })
      } else done({ stdout })
    })
    child.stdin.end(input)
  })
}

/** Whether VALIDATOR is validator: what it answers to `--version`, or why it is not. */
async function identify(cwd) {
  const ran = await run(["--version"], "", cwd, TOOL_TIMEOUT_MS)
  if (ran.interrupted) return { failed: `\`--version\` was stopped by ${ran.interrupted}` }
  if (ran.failed) return { failed: `\`--version\`: ${ran.failed}` }
  if (!ran.stdout.startsWith("validator ")) return { failed: "`--version` answered as no validator does" }
  return {}
}

/** Runs `validator hook opencode` with `input` on stdin, as `run` answers. */
function judge(input, cwd, deadline = DEADLINE, timeout = TIMEOUT_MS) {
  const args = ["-c", RULES, "hook", "opencode", "--task-dir", cwd, "--deadline", deadline]
  return run(args, input, cwd, timeout)
}

/**
 * validator's answer to a stop, read: `{ pass }`, `{ block: reason }`, `{ stop: message }`,
 * or `{ unread: why }` for what no validator answers (never taken as a pass).
 */
function readStop(stdout) {
  if (!stdout.trim()) return { pass: true }
  let reply
  try {
    reply = JSON.parse(stdout)
  } catch {
    return { unread: "its answer is not JSON" }
  }
  if (reply?.decision === "block" && typeof reply.reason === "string") return { block: reply.reason }
  if (reply?.continue === false) return { stop: reply.systemMessage ?? reply.stopReason ?? "" }
  return { unread: "its answer is none of a stop's (a block, or continue: false)" }
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
      "validator plugin: set VALIDATOR_BIN and VALIDATOR_RULES to absolute paths; until then every tool call is refused and every stop held as not judged",
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

  // Sessions held in a row because validator could not answer: kept here, in OpenCode's own
  // process, where the agent's files and commands cannot reset it.
  const unjudged = new Map()

  /** validator's answer to a tool event, parsed; null when it had none. Throws when validator
   * could not answer: the caller refuses the call, or tells the model. */
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
    const ran = await judge(JSON.stringify(input), directory, TOOL_DEADLINE, TOOL_TIMEOUT_MS)
    const why = ran.interrupted ? `it was stopped by ${ran.interrupted}` : ran.failed
    if (why) throw new Error(`validator at ${VALIDATOR} did not answer this tool call (${why}), so it was not judged`)
    if (!ran.stdout.trim()) return null
    try {
      return JSON.parse(ran.stdout)
    } catch {
      throw new Error(`validator at ${VALIDATOR} did not answer this tool call (its answer is not JSON), so it was not judged`)
    }
  }

  /** What is sent into the session, or null for nothing (PASS, or stopped for a person). */
  const judgeIdle = async (sessionID) => {
    const who = await identify(directory)
    if (who.failed) return notJudged(sessionID, who.failed)
    const input = JSON.stringify({
      session_id: sessionID,
      cwd: directory,
      hook_event_name: "session.idle",
      last_assistant_message: await lastAssistantText(client, sessionID),
      tokens: sessionTokens(sessionID),
    })
    const ran = await judge(input, directory)
    if (ran.interrupted) {
      console.error(`validator was stopped by ${ran.interrupted} before it judged`)
      return INTERRUPTED
    }
    if (ran.failed) return notJudged(sessionID, ran.failed)
    const reply = readStop(ran.stdout)
    if (reply.unread) return notJudged(sessionID, reply.unread)
    unjudged.delete(sessionID)
    if (reply.stop) console.error(reply.stop)
    return reply.block ?? null
  }

  /** A stop validator did not answer: held, the person told, MAX_UNJUDGED times in a row;
   * then the session is left idle for a person. Never a pass. */
  const notJudged = (sessionID, failed) => {
    const held = (unjudged.get(sessionID) ?? 0) + 1
    unjudged.set(sessionID, held)
    const why = `validator at ${VALIDATOR} did not answer this stop (${failed}), so it was not judged. If it cannot run here, reinstall it or point VALIDATOR_BIN at one that runs.`
    if (held > MAX_UNJUDGED) {
      console.error(`validator plugin: NOT JUDGED, and stopped for a person after ${MAX_UNJUDGED} such stops in a row: ${why} Nothing more is sent to the session.`)
      return null
    }
    console.error(`validator plugin: NOT JUDGED (${held} of ${MAX_UNJUDGED} in a row): ${why}`)
    return `# validator: NOT JUDGED\n\n- ${why}\n\nDo not go on with other work: say in your last message that validator cannot run, then finish.`
  }

  const onIdle = async (sessionID) => {
    if (judging.has(sessionID)) {
      again.add(sessionID)
      return
    }
    judging.add(sessionID)
    let reply = null
    try {
      reply = await judgeIdle(sessionID)
    } catch (err) {
      // A plugin that cannot say what validator answered holds the stop as not judged.
      reply = notJudged(sessionID, `the plugin failed: ${err?.message ?? err}`)
    } finally {
      judging.delete(sessionID)
    }
    if (typeof reply === "string") {
      again.delete(sessionID) // the feedback starts a new turn, whose idle is judged
      // Not awaited: the session's next idle must find it free to judge again.
      client.session
        .prompt({ path: { id: sessionID }, body: { parts: [{ type: "text", text: reply }] } })
        .catch((err) => console.error(`validator plugin: cannot send the feedback: ${err?.message ?? err}`))
      return
    }
    if (again.delete(sessionID)) await onIdle(sessionID)
  }

  return {
    event: async ({ event }) => {
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
      // A call validator did not answer is refused (onTool throws): the model reads why, and
      // its stop is held the same way.
      const reply = await onTool("tool.execute.before", input.sessionID, input.tool, output.args)
      if (reply?.decision !== "deny") {
        if (reply?.systemMessage) console.error(reply.systemMessage)
        // A shell call validator confines: it runs as `validator exec … -- bash -c '…'`.
        if (reply?.args && typeof reply.args === "object" && output.args) Object.assign(output.args, reply.args)
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
      const response = { output: output?.output, exit: output?.metadata?.exit }
      let tell
      try {
        tell = (await onTool("tool.execute.after", input.sessionID, input.tool, input.args, response))?.tell
      } catch (err) {
        console.error(`validator plugin: ${err.message}`)
        tell = `${err.message}; the stop will be held until validator can judge it.`
      }
      if (typeof tell === "string" && output && typeof output.output === "string") {
        output.output += `\n\n${tell}`
      }
    },
  }
}
