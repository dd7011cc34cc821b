//! What a crashed watcher left running. Every gate a watcher starts carries
//! `VALIDATOR_WATCHER=<mark>`, the mark derived from the state directory, so the next watcher to
//! claim that state ([`health::Registration`]) can find the gate processes a SIGKILLed
//! predecessor could not kill, and kill them before judging anything: two runs of one task must
//! never work in the same directory at once.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::health;

/// The mark of the watchers of one state directory.
pub struct Mark(String);

impl Mark {
    /// The same across restarts, different for every state directory, so a watcher never
    /// touches another's gates. The directory's device and inode go in beside its path: two
    /// containers sharing a process namespace can mount different volumes at one path.
    pub fn for_state(state: &Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        let state: PathBuf = state.canonicalize().unwrap_or_else(|_| state.to_path_buf());
        let identity = std::fs::metadata(&state)
            .map(|meta| format!("{}:{}", meta.dev(), meta.ino()))
            .unwrap_or_default();
        let digest = Sha256::new()
            .chain_update(state.as_os_str().as_encoded_bytes())
            .chain_update([0])
            .chain_update(identity.as_bytes())
            .finalize();
        Mark(format!("{digest:x}")[..16].to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Kills every process carrying this mark (at start: what the gates of a killed predecessor
    /// left running; at the end: what left its gate's group); returns how many there were.
    /// Only while the claim on the state is exclusive: without the lock, they might be the
    /// gates of a watcher that is still alive.
    pub fn kill_orphans(&self, claim: &health::Registration) -> usize {
        if !claim.exclusive() {
            return 0;
        }
        // Whole cgroups first (what is in them dies however it hid), then anything marked, then
        // what was re-parented to this watcher.
        let cgroups =
            validator_process::reaper::kill_left_cgroups(&format!("validator-{}", self.0));
        cgroups
            + validator_process::kill_marked(&self.0)
            + validator_process::reaper::reap_adopted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_directory_has_its_own_mark_and_keeps_it() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mark = Mark::for_state(one.path());
        assert_eq!(mark.as_str().len(), 16);
        assert_eq!(mark.as_str(), Mark::for_state(one.path()).as_str());
        assert_ne!(mark.as_str(), Mark::for_state(two.path()).as_str());
    }
}
