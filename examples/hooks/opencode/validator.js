// validator as OpenCode's stop gate. OpenCode has no blocking stop hook, so this plugin judges
// a session when it goes idle, through `validator hook opencode` (the adapter Claude Code,
// Codex and Gemini CLI use), and on FAIL sends validator's feedback back into the same session
// as its next message. The breakers (max_attempts, strikes) end the loop as for the other
// agents: on ESCALATED or BLOCKED nothing is sent and the session stays idle.
//
// Install: put this file in .opencode/plugin/ (or ~/.config/opencode/plugin/), or name it in
// the config's "plugin" list as "file:///ABSOLUTE/PATH/TO/validator.js", and set the rules
// file below (or VALIDATOR_RULES in OpenCode's environment). It runs where OpenCode waits for
// plugins: the TUI and `opencode serve` (with `opencode run --attach`), not plain
// `opencode run`, which exits on its first idle.
import { spawn } from "node:child_process"

const VALIDATOR = process.env.VALIDATOR_BIN || "validator"
const RULES = process.env.VALIDATOR_RULES || "/ABSOLUTE/PATH/TO/validator.yaml"
// validator's own budget bounds a run; this only stops a hung process from holding the session.
const TIMEOUT_MS = 30 * 60 * 1000

/** Runs validator with `input` on stdin; its stdout, or null when it could not judge. */
function judge(input, cwd) {
  return new Promise((resolve) => {
    const child = spawn(VALIDATOR, ["-c", RULES, "hook", "opencode"], {
      cwd,
      stdio: ["pipe", "pipe", "pipe"],
      timeout: TIMEOUT_MS,
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("error", (err) => {
      console.error(`validator could not run: ${err.message}`)
      resolve(null)
    })
    child.on("close", (code) => {
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
    return (message.parts ?? [])
      .filter((part) => part?.type === "text" && typeof part.text === "string")
      .map((part) => part.text)
      .join("\n")
  }
  return ""
}

export const ValidatorGate = async ({ client, directory }) => {
  const judging = new Set()
  return {
    event: async ({ event }) => {
      if (event?.type !== "session.idle") return
      const sessionID = event.properties?.sessionID
      if (!sessionID || judging.has(sessionID)) return
      judging.add(sessionID)
      let reply = null
      try {
        const input = JSON.stringify({
          session_id: sessionID,
          cwd: directory,
          hook_event_name: "session.idle",
          last_assistant_message: await lastAssistantText(client, sessionID),
        })
        const answer = await judge(input, directory)
        reply = answer && answer.trim() ? JSON.parse(answer) : null
      } catch (err) {
        console.error(`validator plugin: ${err?.message ?? err}`)
      } finally {
        judging.delete(sessionID)
      }
      if (reply?.decision === "block" && typeof reply.reason === "string") {
        // Not awaited: the session's next idle must find it free to judge again.
        client.session
          .prompt({ path: { id: sessionID }, body: { parts: [{ type: "text", text: reply.reason }] } })
          .catch((err) => console.error(`validator plugin: cannot send the feedback: ${err?.message ?? err}`))
      } else if (reply?.systemMessage) {
        console.error(reply.systemMessage)
      }
    },
  }
}
