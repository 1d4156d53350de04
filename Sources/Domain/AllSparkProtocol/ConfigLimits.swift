/// Limits shared by the config file, the command line and the server's
/// `clientConfig` (the recorder's own: the wire protocol states none).
/// Here so the protocol can check a server's values without the config.
public enum ConfigLimits {
    public static let chunkDurationMs = 1_000...3_600_000
    public static let bufferMaxMB = 1...10_000_000
    /// Frames per second a server's `fps` may ask of the source.
    public static let framerate = 1.0...240.0
}
