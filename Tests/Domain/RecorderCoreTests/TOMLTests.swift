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
}
