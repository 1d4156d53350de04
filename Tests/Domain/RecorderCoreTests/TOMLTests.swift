import XCTest
@testable import RecorderCore

final class TOMLTests: XCTestCase {
    func testParsesTablesValuesAndComments() throws {
        let doc = try TOMLDocument(parsing: """
            # comment
            top = "x"
            [recording]
            pipeline = "a # not a comment" # comment
            chunk_duration_ms = 30_000
            ratio = 1.5
            on = true
            [pipeline.vars]
            device = '/dev/video0'
            "quoted key" = "\\u00e9\\n"
            """, file: "t.toml")
        XCTAssertEqual(doc["top"]?.value, .string("x"))
        XCTAssertEqual(doc["recording.pipeline"]?.value, .string("a # not a comment"))
        XCTAssertEqual(doc["recording.chunk_duration_ms"], TOMLEntry(value: .integer(30000), line: 5))
        XCTAssertEqual(doc["recording.ratio"]?.value, .float(1.5))
        XCTAssertEqual(doc["recording.on"]?.value, .boolean(true))
        XCTAssertEqual(doc["pipeline.vars.device"]?.value, .string("/dev/video0"))
        XCTAssertEqual(doc["pipeline.vars.quoted key"]?.value, .string("é\n"))
        XCTAssertEqual(doc.tables, ["recording", "pipeline.vars"])
    }

    func testCRLFLineEndingsAreLineEndings() throws {
        // As saved by Windows editors; TOML allows LF or CRLF.
        let doc = try TOMLDocument(parsing: "# comment\r\n[recording]\r\npipeline = \"p\"\r\n\r\nchunk_duration_ms = 2000 # c\r\n[privacy]\r\nface_blur = false\r\n", file: "w.toml")
        XCTAssertEqual(doc["recording.pipeline"], TOMLEntry(value: .string("p"), line: 3))
        XCTAssertEqual(doc["recording.chunk_duration_ms"], TOMLEntry(value: .integer(2000), line: 5))
        XCTAssertEqual(doc["privacy.face_blur"], TOMLEntry(value: .boolean(false), line: 7))
        XCTAssertThrowsError(try TOMLDocument(parsing: "a = 1\r\nb = \"open\r\n", file: "w.toml")) { error in
            XCTAssertEqual((error as? TOMLError)?.line, 2, "\(error)")
        }
    }

    func testErrorsNameTheLine() {
        let cases: [(String, Int, String)] = [
            ("a = 1\nb = \"open", 2, "unterminated string"),
            ("[x]\na = [1, 2]", 2, "arrays are not supported"),
            ("a = 1\na = 2", 2, "set twice"),
            ("a = bare", 1, "strings need quotes"),
            ("[x\n", 1, "expected ']'"),
            ("a = 1 junk", 1, "unexpected text"),
            ("a = {b = 1}", 1, "inline tables"),
            ("[x]\n[x]", 2, "declared twice"),
        ]
        for (text, line, fragment) in cases {
            XCTAssertThrowsError(try TOMLDocument(parsing: text, file: "f.toml"), text) { error in
                guard let error = error as? TOMLError else { return XCTFail("\(error)") }
                XCTAssertEqual(error.line, line, text)
                XCTAssertTrue(error.description.hasPrefix("f.toml:\(line): "), error.description)
                XCTAssertTrue(error.reason.contains(fragment), "\(error.reason) should mention \(fragment)")
            }
        }
    }

    /// Numbers as TOML 1.0 writes them, from the spec's valid and invalid examples.
    func testNumbersFollowTheTOMLGrammar() throws {
        let valid: [(String, TOMLValue)] = [
            ("+99", .integer(99)), ("42", .integer(42)), ("0", .integer(0)), ("-17", .integer(-17)),
            ("1_000", .integer(1000)), ("5_349_221", .integer(5_349_221)), ("0xDEADBEEF", .integer(0xDEAD_BEEF)),
            ("0x7D0", .integer(2000)), ("0o755", .integer(0o755)), ("0b11010110", .integer(0b1101_0110)),
            ("+1.0", .float(1)), ("3.1415", .float(3.1415)), ("-0.01", .float(-0.01)), ("5e+22", .float(5e22)),
            ("1e06", .float(1e6)), ("-2E-2", .float(-0.02)), ("6.626e-34", .float(6.626e-34)), ("224_617.445_991", .float(224_617.445_991)),
            ("inf", .float(.infinity)), ("-inf", .float(-.infinity)),
        ]
        for (text, value) in valid {
            let doc = try TOMLDocument(parsing: "n = \(text)\n", file: "n.toml")
            XCTAssertEqual(doc["n"]?.value, value, text)
        }
        for text in ["002000", "_2000", "2000_", "1__000", ".5", "5.", "7.e+3", "3.e+20", "+0x10", "0X10", "0x", "1e", "1.5.2",
                     "99999999999999999999", "0b102", "0o8"] {
            XCTAssertThrowsError(try TOMLDocument(parsing: "[recording]\nn = \(text)\n", file: "bad.toml"), text) { error in
                XCTAssertTrue("\(error)".contains("bad.toml:2"), "names the file and line: \(error)")
            }
        }
    }
}
