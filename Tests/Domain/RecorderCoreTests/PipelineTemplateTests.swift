import XCTest
@testable import RecorderCore

final class PipelineTemplateTests: XCTestCase {
    func testSubstitutesVariablesAndStripsComments() throws {
        let t = try PipelineTemplate(text: """
            # a comment line
            v4l2src device=${device} ! video/x-raw,width=${width} # trailing
              ! textoverlay text="a # b costs $$5" ! appsink name=blur_in
            """, file: "p.pipeline", variables: ["device": "/dev/video1", "width": "640"])
        XCTAssertEqual(t.description, "v4l2src device=/dev/video1 ! video/x-raw,width=640 ! textoverlay text=\"a # b costs $5\" ! appsink name=blur_in")
        XCTAssertEqual(t.line(mentioning: "textoverlay"), 3)
        XCTAssertEqual(t.line(mentioning: "blur_in"), 3)
        XCTAssertEqual(t.line(mentioning: "v4l2src"), 2)
        XCTAssertNil(t.line(mentioning: "v4l2"), "whole words only")
    }

    func assertError(_ text: String, variables: [String: String] = [:], line: Int?, contains fragment: String,
                     file: StaticString = #filePath, sourceLine: UInt = #line) {
        XCTAssertThrowsError(try PipelineTemplate(text: text, file: "p.pipeline", variables: variables), file: file, line: sourceLine) { error in
            guard let error = error as? PipelineError else { return XCTFail("\(error)", file: file, line: sourceLine) }
            XCTAssertEqual(error.line, line, error.description, file: file, line: sourceLine)
            XCTAssertTrue(error.reason.contains(fragment), "\(error.reason) should contain \(fragment)", file: file, line: sourceLine)
            if let line { XCTAssertTrue(error.description.hasPrefix("p.pipeline:\(line): "), file: file, line: sourceLine) }
        }
    }

    func testErrorsPointAtTheLine() {
        assertError("videotestsrc\n ! x264enc bitrate=${rate}", variables: ["width": "1"], line: 2, contains: "unknown variable ${rate}")
        assertError("a ! b\n ! c !\n", line: 2, contains: "ends with '!'")
        assertError("! a ! b", line: 1, contains: "starts with '!'")
        assertError("a !\n! b", line: 2, contains: "follows the '!'")
        assertError("a ! ! b", line: 1, contains: "two '!' in a row")
        assertError("a\nb text=\"open", line: 2, contains: "unterminated quote")
        assertError("a ${x", variables: ["x": "1"], line: 1, contains: "without a closing")
        assertError("# only a comment\n\n", line: nil, contains: "holds no pipeline")
    }

    func testUnknownVariableListsTheKnownOnes() {
        XCTAssertThrowsError(try PipelineTemplate(text: "a=${nope}", file: "f", variables: ["b": "1", "a": "2"])) { error in
            XCTAssertTrue("\(error)".contains("(defined: a, b)"), "\(error)")
            XCTAssertTrue("\(error)".contains("--set pipeline.vars.nope=VALUE"), "\(error)")
        }
    }

    func testMissingFile() {
        XCTAssertThrowsError(try PipelineTemplate(file: "/nope.pipeline", variables: [:])) { error in
            XCTAssertTrue("\(error)".hasPrefix("/nope.pipeline: cannot read"), "\(error)")
        }
    }
}
