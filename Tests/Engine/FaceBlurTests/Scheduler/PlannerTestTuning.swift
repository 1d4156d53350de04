@testable import FaceBlur

extension PrivacyTuning {
    /// The tuning the planner's table tests are written against: live's, with whole frames every
    /// 8 and tiles every 16 frames of change (short clips reach several search cycles) and no
    /// spare-time tiles (a test asks for them where it is about them).
    static var plannerTests: PrivacyTuning {
        var tuning = PrivacyTuning.live
        tuning.searches.wholeEvery = 8
        tuning.searches.tileEvery = 16
        tuning.searches.spareTileScale = 0
        return tuning
    }
}
