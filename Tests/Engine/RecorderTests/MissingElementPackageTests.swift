import XCTest
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// A pipeline naming an element that is not installed says which Debian package provides it
/// (issue 14, item 4). The hardware encoders are not installed on the test machine.
extension PipelineLoaderTests {
    func testAMissingHardwareEncoderNamesItsDebianPackageAndWhatElseItNeeds() throws {
        try XCTSkipIf(gstElementExists("vaapih264enc"), "vaapih264enc is installed here")
        try assertFails(good.replacingOccurrences(of: "x264enc", with: "vaapih264enc"), line: 5,
                        contains: ["no element 'vaapih264enc'", "apt install gstreamer1.0-vaapi", "VA-API"])
        let (dir, path) = try write(good.replacingOccurrences(of: "x264enc", with: "vaapih264enc"))
        XCTAssertThrowsError(try PipelineLoader.load(file: path, variables: vars, privacyBoundary: true)) { error in
            XCTAssertFalse("\(error)".contains("scripts/setup"), "scripts/setup installs no hardware encoder: \(error)")
        }
        _ = dir
    }

    func testAMisspeltElementStillSaysHowToCheck() {
        XCTAssertNil(ElementPackages.provider(of: "x264encc"))
        XCTAssertTrue(ElementPackages.advice(for: "x264encc").contains("gst-inspect-1.0 x264encc"))
        XCTAssertEqual(ElementPackages.advice(for: "x264enc"), "its plugin is not installed: apt install gstreamer1.0-plugins-ugly")
        XCTAssertEqual(ElementPackages.provider(of: "alsasrc")?.package, "gstreamer1.0-alsa")
        XCTAssertNotNil(ElementPackages.provider(of: "nvh264enc")?.needs)
    }

    private func gstElementExists(_ name: String) -> Bool {
        (try? runTool("/usr/bin/gst-inspect-1.0", ["--exists", name]).status) == 0
    }
}
