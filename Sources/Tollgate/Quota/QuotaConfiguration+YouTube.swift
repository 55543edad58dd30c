extension QuotaConfiguration {
    /// The bucket of ``youTubeDataAPIv3`` that every method but two shares: 10,000 units a day.
    public static let youTubeBucket = "youtube"
    /// The bucket of `search.list` in ``youTubeDataAPIv3``: 100 calls a day.
    public static let youTubeSearchBucket = "youtube.search"
    /// The bucket of `videos.insert` in ``youTubeDataAPIv3``: 100 calls a day.
    public static let youTubeUploadBucket = "youtube.videos.insert"

    /// The YouTube Data API v3 as Google's quota page describes it as of 2026-11
    /// (developers.google.com/youtube/data/determine_quota_cost): `search.list` and `videos.insert`
    /// each have a bucket of their own, 100 calls a day at 1 unit a call (``youTubeSearchBucket``,
    /// ``youTubeUploadBucket``); every other method shares 10,000 units a day (``youTubeBucket``).
    /// All three reset at midnight Pacific time.
    ///
    /// Costs in the shared bucket: every `.list` method 1, except `captions.list` 50; writes
    /// (`insert`, `update`, `delete`, `rate`, `set`, …) 50, except `captions.insert` 400 and
    /// `captions.update` 450; `captions.download` 200. Endpoints are named `resource.method`.
    /// A `304 Not Modified` costs 1 unit (``youTubeNotModifiedCost``): Google's page says "All API
    /// requests, including invalid requests, incur a quota cost of at least one point", and a 304
    /// is measured at 1, so on YouTube a revalidation saves bandwidth, not units (what saves units is
    /// not asking: ``GateConfiguration/freshFor``). Unknown methods cost 1 in the shared bucket. The
    /// model before 2026 is ``youTubeDataAPIv3SinglePool``.
    public static let youTubeDataAPIv3: QuotaConfiguration = {
        var costs = youTubeSharedCosts()
        costs["search.list"] = EndpointCost(bucket: youTubeSearchBucket, units: 1, notModifiedCost: youTubeNotModifiedCost)
        costs["videos.insert"] = EndpointCost(bucket: youTubeUploadBucket, units: 1, notModifiedCost: youTubeNotModifiedCost)
        return QuotaConfiguration(
            bucketLimits: [youTubeBucket: 10_000, youTubeSearchBucket: 100, youTubeUploadBucket: 100],
            endpointCosts: costs, defaultBucket: youTubeBucket, defaultCost: 1,
            notModifiedCostByDefault: youTubeNotModifiedCost
        )
    }()

    /// What a `304 Not Modified` costs on YouTube: 1 unit, the minimum every request costs
    /// (developers.google.com/youtube/v3/determine_quota_cost: "All API requests, including invalid
    /// requests, incur a quota cost of at least one point").
    public static let youTubeNotModifiedCost = NotModifiedCost.units(1)

    /// The YouTube Data API v3 as it was metered until 2025:
    /// one 10,000-unit daily bucket for every method, `search.list` 100 units and `videos.insert`
    /// 1,600, the other costs as in ``youTubeDataAPIv3``. For projects still on that model.
    public static let youTubeDataAPIv3SinglePool: QuotaConfiguration = {
        var costs = youTubeSharedCosts()
        costs["search.list"] = EndpointCost(bucket: youTubeBucket, units: 100, notModifiedCost: youTubeNotModifiedCost)
        costs["videos.insert"] = EndpointCost(bucket: youTubeBucket, units: 1600, notModifiedCost: youTubeNotModifiedCost)
        return QuotaConfiguration(
            bucketLimits: [youTubeBucket: 10_000], endpointCosts: costs, defaultBucket: youTubeBucket, defaultCost: 1,
            notModifiedCostByDefault: youTubeNotModifiedCost
        )
    }()

    /// The costs both models share, all in ``youTubeBucket``.
    private static func youTubeSharedCosts() -> [String: EndpointCost] {
        let reads = [
            "activities.list", "channels.list", "channelSections.list", "comments.list", "commentThreads.list",
            "guideCategories.list", "i18nLanguages.list", "i18nRegions.list", "members.list",
            "membershipsLevels.list", "playlistImages.list", "playlistItems.list", "playlists.list",
            "subscriptions.list", "superChatEvents.list", "videoAbuseReportReasons.list", "videoCategories.list",
            "videos.list", "videos.getRating",
        ]
        let writes = [
            "captions.delete", "channelBanners.insert", "channels.update",
            "channelSections.insert", "channelSections.update", "channelSections.delete",
            "comments.insert", "comments.update", "comments.delete", "comments.markAsSpam",
            "comments.setModerationStatus", "commentThreads.insert",
            "playlistImages.insert", "playlistImages.update", "playlistImages.delete",
            "playlistItems.insert", "playlistItems.update", "playlistItems.delete",
            "playlists.insert", "playlists.update", "playlists.delete",
            "subscriptions.insert", "subscriptions.delete", "thumbnails.set",
            "videos.update", "videos.rate", "videos.reportAbuse", "videos.delete",
            "watermarks.set", "watermarks.unset",
        ]
        let special = ["captions.list": 50, "captions.insert": 400, "captions.update": 450, "captions.download": 200]
        var costs: [String: EndpointCost] = [:]
        for method in reads { costs[method] = EndpointCost(bucket: youTubeBucket, units: 1, notModifiedCost: youTubeNotModifiedCost) }
        for method in writes { costs[method] = EndpointCost(bucket: youTubeBucket, units: 50, notModifiedCost: youTubeNotModifiedCost) }
        for (method, units) in special { costs[method] = EndpointCost(bucket: youTubeBucket, units: units, notModifiedCost: youTubeNotModifiedCost) }
        return costs
    }

    /// Sets what a `304 Not Modified` costs for every endpoint at once, listed or not.
    /// - Parameter cost: What a 304 costs.
    public mutating func setNotModifiedCost(_ cost: NotModifiedCost) {
        notModifiedCostByDefault = cost
        for endpoint in endpointCosts.keys { endpointCosts[endpoint]?.notModifiedCost = cost }
    }

    /// Whether every `304 Not Modified` is charged in full. Setting it sets every endpoint's
    /// ``EndpointCost/notModifiedCost`` to `.full` (true) or `.free` (false).
    @available(*, deprecated, message: "a 304's cost is a number of units now: use setNotModifiedCost(_:)")
    public var chargesNotModified: Bool {
        get { notModifiedCostByDefault == .full && endpointCosts.values.allSatisfy { $0.notModifiedCost == .full } }
        set { setNotModifiedCost(newValue ? .full : .free) }
    }
}
