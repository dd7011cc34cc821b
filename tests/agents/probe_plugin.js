// OpenCode's side of tests/agents/probe_hook.py. OpenCode has no command hooks: its tool events
// are plugin hooks, so this plugin hands each one to probe_hook.py (which logs it and picks the
// configured answer) and does what the answer says:
//   tool.execute.before  {"throw": "message"}  throws Error(message)
//                        {"args": {...}}       merged into output.args (what the tool runs with)
//                        {"abort": true}       client.session.abort() on the call's session first
//   tool.execute.after   {"throw": "message"}  throws Error(message)
//                        {"output": "text"}    replaces output.output (what the model is shown)
//                        {"append": "text"}    appended to output.output
//                        {"title": "text"}     replaces output.title
// Every bus event the plugin sees (message.updated with tokens, session.idle, ...) is appended
// to the probe log's path + ".events.jsonl", untouched.
// PROBE_CONFIG (absolute path of the probe's config) and PROBE_HOOK (probe_hook.py) come from
// OpenCode's environment.
import { spawnSync } from "node:child_process"
import { appendFileSync, readFileSync } from "node:fs"

const CONFIG = process.env.PROBE_CONFIG
const HOOK = process.env.PROBE_HOOK

function ask(event, payload) {
  const run = spawnSync("python3", [HOOK, "--config", CONFIG, event], {
    input: JSON.stringify(payload),
    encoding: "utf8",
  })
  const text = (run.stdout || "").trim()
  if (!text) return {}
  try {
    return JSON.parse(text)
  } catch {
    return {}
  }
}

export const Probe = async (context) => {
  const log = JSON.parse(readFileSync(CONFIG, "utf8")).log + ".events.jsonl"
  appendFileSync(log, JSON.stringify({ event: "plugin.init", directory: context.directory,
                                       worktree: context.worktree, t: Date.now() / 1000 }) + "\n")
  return {
    event: async ({ event }) => {
      appendFileSync(log, JSON.stringify({ event: "event", t: Date.now() / 1000, payload: event }) + "\n")
    },
    "tool.execute.before": async (input, output) => {
      const answer = ask("tool.execute.before", { input, output })
      if (answer.args) Object.assign(output.args, answer.args)
      if (answer.abort) await context.client.session.abort({ path: { id: input.sessionID } })
      if (typeof answer.throw === "string") throw new Error(answer.throw)
    },
    "tool.execute.after": async (input, output) => {
      const answer = ask("tool.execute.after", { input, output })
      if (typeof answer.output === "string") output.output = answer.output
      if (typeof answer.append === "string") output.output = (output.output ?? "") + answer.append
      if (typeof answer.title === "string") output.title = answer.title
      if (typeof answer.throw === "string") throw new Error(answer.throw)
    },
  }
}
