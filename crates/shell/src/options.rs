//! A command's arguments read as getopt reads them: `-abc` is three flags, a short option that
//! takes a value takes the rest of its word or the next word (`-tDIR`, `-t DIR`), a long one
//! `--name=VALUE` or `--name VALUE`, and GNU's unambiguous prefixes (`--target=`) count as the
//! option they begin. Reading options any other way judges the wrong words as paths.

use crate::script::Word;

/// Which options of one program take a value.
#[derive(Clone, Copy, Default)]
pub(crate) struct Spec {
    /// Short options that take a value (`"tS"`: `-t DIR`, `-S SUF`).
    pub short: &'static str,
    /// Short options whose value, if any, is attached (`sed -i.bak`).
    pub short_optional: &'static str,
    /// Long options (without `--`) that take a value.
    pub long: &'static [&'static str],
    /// Long options that take no value, or one only attached (`--in-place=.bak`): known so
    /// that an abbreviation (`--sym`) is read as the option it stands for.
    pub long_flags: &'static [&'static str],
    /// The first operand ends the options (`env`, `sudo`, `xargs`: what follows is a command).
    pub stop_at_operand: bool,
}

/// One option as given: its name (`-t`, `--target-directory`) and its value.
#[derive(Debug, Clone)]
pub(crate) struct Given {
    pub name: String,
    pub value: Option<Word>,
}

/// The arguments, read.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub options: Vec<Given>,
    pub operands: Vec<Word>,
    /// Where the operands start when `stop_at_operand` (the command a wrapper runs).
    pub rest_at: usize,
    /// A word that is not literal where an option could be: its meaning is not known.
    pub unknown_option: bool,
}

impl Parsed {
    /// Whether any of `names` is given (`-t`, `--target-directory`).
    pub fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|o| names.contains(&o.name.as_str()))
    }

    /// The value of the first of `names` given.
    pub fn value(&self, names: &[&str]) -> Option<&Word> {
        self.options
            .iter()
            .find(|o| names.contains(&o.name.as_str()))
            .and_then(|o| o.value.as_ref())
    }

    /// The values of every one of `names` given, in order.
    pub fn values<'p>(&'p self, names: &'p [&str]) -> impl Iterator<Item = &'p Word> + 'p {
        self.options
            .iter()
            .filter(|o| names.contains(&o.name.as_str()))
            .filter_map(|o| o.value.as_ref())
    }
}

/// A word made from part of another: literal when the whole was.
fn part(word: &Word, raw: &str, literal: Option<&str>) -> Word {
    Word {
        raw: raw.to_owned(),
        literal: word.literal.as_ref().and(literal).map(str::to_owned),
    }
}

pub(crate) fn parse(args: &[Word], spec: Spec) -> Parsed {
    let mut parsed = Parsed {
        rest_at: args.len(),
        ..Parsed::default()
    };
    let mut at = 0;
    while let Some(arg) = args.get(at) {
        at += 1;
        let Some(text) = arg.literal.as_deref() else {
            // `$FLAGS`: an option or an operand, not known before it runs.
            if arg.raw.starts_with('-') || arg.raw.starts_with('$') {
                parsed.unknown_option = true;
            }
            if spec.stop_at_operand {
                parsed.rest_at = at - 1;
                return parsed;
            }
            parsed.operands.push(arg.clone());
            continue;
        };
        if text == "--" {
            parsed.rest_at = at;
            parsed.operands.extend(args[at..].iter().cloned());
            return parsed;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let full = full_name(name, spec);
            let valued = full.is_some_and(|full| spec.long.contains(&full));
            let value = match attached {
                Some(value) => Some(part(arg, value, Some(value))),
                None if valued => {
                    at += 1;
                    args.get(at - 1).cloned()
                }
                None => None,
            };
            parsed.options.push(Given {
                name: format!("--{}", full.unwrap_or(name)),
                value,
            });
            continue;
        }
        if text.len() > 1 && text.starts_with('-') {
            let cluster = &text[1..];
            for (i, flag) in cluster.char_indices() {
                let rest = &cluster[i + flag.len_utf8()..];
                let name = format!("-{flag}");
                if spec.short.contains(flag) {
                    let value = if rest.is_empty() {
                        at += 1;
                        args.get(at - 1).cloned()
                    } else {
                        Some(part(arg, rest, Some(rest)))
                    };
                    parsed.options.push(Given { name, value });
                    break;
                }
                if spec.short_optional.contains(flag) {
                    let value = (!rest.is_empty()).then(|| part(arg, rest, Some(rest)));
                    parsed.options.push(Given { name, value });
                    break;
                }
                parsed.options.push(Given { name, value: None });
            }
            continue;
        }
        if spec.stop_at_operand {
            parsed.rest_at = at - 1;
            return parsed;
        }
        parsed.operands.push(arg.clone());
    }
    parsed
}

/// The long option `name` stands for: itself, or the one known option it is a prefix of.
fn full_name(name: &str, spec: Spec) -> Option<&'static str> {
    let known = || spec.long.iter().chain(spec.long_flags);
    if let Some(exact) = known().find(|v| **v == name) {
        return Some(exact);
    }
    let mut prefixed = known().filter(|v| !name.is_empty() && v.starts_with(name));
    match (prefixed.next(), prefixed.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        crate::script::read(line)
            .commands
            .remove(0)
            .words
            .split_off(1)
    }

    const CP: Spec = Spec {
        short: "tS",
        short_optional: "",
        long: &["target-directory", "suffix"],
        long_flags: &[],
        stop_at_operand: false,
    };

    #[test]
    fn values_attached_separate_and_abbreviated() {
        for line in [
            "cp -t .. a b",
            "cp -t.. a b",
            "cp -vt.. a b",
            "cp --target-directory=.. a b",
            "cp --target-directory .. a b",
            "cp --target=.. a b",
            "cp --t .. a b",
        ] {
            let parsed = parse(&words(line), CP);
            assert_eq!(
                parsed
                    .value(&["-t", "--target-directory"])
                    .and_then(|w| w.literal.as_deref()),
                Some(".."),
                "{line}"
            );
            let operands: Vec<_> = parsed
                .operands
                .iter()
                .filter_map(|w| w.literal.clone())
                .collect();
            assert_eq!(operands, ["a", "b"], "{line}");
        }
    }

    #[test]
    fn a_wrapper_stops_at_its_command() {
        let spec = Spec {
            short: "uCS",
            long: &["unset", "chdir", "split-string"],
            stop_at_operand: true,
            ..Spec::default()
        };
        let args = words("env -C .. -i touch p");
        let parsed = parse(&args, spec);
        assert_eq!(
            parsed.value(&["-C"]).and_then(|w| w.literal.as_deref()),
            Some("..")
        );
        assert_eq!(args[parsed.rest_at].literal.as_deref(), Some("touch"));
        let attached = parse(&words("env '-Sgit push'"), spec);
        assert!(attached.has(&["-S"]));
    }
}
