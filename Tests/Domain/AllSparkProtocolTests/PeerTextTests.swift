import XCTest
@testable import AllSparkProtocol

final class PeerTextTests: XCTestCase {
    func testControlBidiAndFormatCharactersAreEscaped() {
        XCTAssertEqual(loggable("a\nb\rc\td"), #"a\nb\rc\td"#)
        XCTAssertEqual(loggable("x\u{202E}y\u{200B}z\u{1B}[31m\u{2028}"), #"x\u{202E}y\u{200B}z\u{1B}[31m\u{2028}"#)
        XCTAssertEqual(loggable(#"a\nb"#), #"a\\nb"#, "a backslash the peer wrote cannot pass for an escape")
        XCTAssertEqual(loggable("Grüße, 日本 🎥"), "Grüße, 日本 🎥", "printable text is left alone")
    }

    func testLongTextIsBoundedAndSaysHowMuchWasLeftOut() {
        XCTAssertEqual(loggable(String(repeating: "a", count: 205)), String(repeating: "a", count: 200) + "…(5 more)")
        XCTAssertEqual(loggable("abc", limit: 2), "ab…(1 more)")
        // Combining marks count one by one: one "character" cannot smuggle in a megabyte.
        let heavy = "e" + String(repeating: "\u{301}", count: 10_000)
        XCTAssertLessThan(loggable(heavy).unicodeScalars.count, 250)
    }
}
