/// The hard limits of the recording settings: the config file is read with
/// them, and every change while running (console, server) is checked against
/// them by `SettingsRules` (the wire protocol states none).
public enum ConfigLimits {
    public static let chunkDurationMs = 1_000...3_600_000
    public static let bufferMaxMB = 1...10_000_000
    /// Frames per second a server's `fps` may ask of the source.
    public static let framerate = 1.0...240.0
}
