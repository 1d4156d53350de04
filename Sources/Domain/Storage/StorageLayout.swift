/// Every name the recorder itself puts in the storage folder besides the
/// chunks (`ChunkName`), in one place, so the catalog knows what is ours.
public enum StorageLayout {
    /// The chunk index (`ChunkCatalog`).
    public static let indexFileName = "catalog.json"
    /// The values the server last set (`ServerSettingsStore` in RecorderCore).
    public static let serverSettingsFileName = "server-settings.json"
    /// The server host and verify_tls last set in the console (`ServerLinkStore` in RecorderCore).
    public static let serverLinkFileName = "server-link.json"
    /// The console password's salted hash (`ConsolePassword` in Console).
    public static let consolePasswordFileName = "console-password.json"
    /// The RTSP stream's password's salted hash (`ConsolePassword.stream` in Console).
    public static let streamPasswordFileName = "stream-password.json"
    /// The suffix drawn once for a host name used as the device name (`DeviceName` in RecorderCore).
    public static let deviceNameFileName = "device-name.json"
    /// Hidden folder of pins shared by every process using the folder (`SharedPins`).
    public static let pinsFolderName = ".pins"
    /// Files written with `StorageFolder.writeAtomically`, whose temporaries
    /// a crash may leave behind.
    public static let atomicallyWritten = [indexFileName, serverSettingsFileName, serverLinkFileName, consolePasswordFileName,
                                           streamPasswordFileName, deviceNameFileName]
}
