//! Maven: a test build that does not compile is "could not run", with javac's first error.
//! Failed tests are named from Surefire's JUnit reports (`junit:`), whose names are whole
//! (`com.example.CalcTest.adds`) where the console shortens them.

use super::Report;

pub fn read(lines: &[&str], report: &mut Report) {
    let Some(at) = lines
        .iter()
        .position(|l| l.starts_with("[ERROR] COMPILATION ERROR"))
    else {
        return;
    };
    let error = lines[at + 1..]
        .iter()
        .filter_map(|l| l.strip_prefix("[ERROR] "))
        .map(str::trim)
        .find(|l| l.contains(".java:["));
    report.cannot_run(&match error {
        Some(error) => format!("COMPILATION ERROR: {error}"),
        None => "COMPILATION ERROR (the test build failed)".to_owned(),
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_compile_error_is_tests_that_could_not_run() {
        let out = "[INFO] Compiling 1 source file\n[ERROR] COMPILATION ERROR : \n[INFO] -------------\n[ERROR] /p/src/test/java/CalcTest.java:[16,28] incompatible types: int cannot be converted to java.lang.String\n[INFO] 1 error\n";
        assert_eq!(
            super::super::from_output(out).could_not_run.as_deref(),
            Some(
                "COMPILATION ERROR: /p/src/test/java/CalcTest.java:[16,28] incompatible types: int cannot be converted to java.lang.String"
            )
        );
    }
}
